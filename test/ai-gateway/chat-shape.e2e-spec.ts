// The full Chat Completions request and response shape through the gateway:
// tools and tool_calls (streamed deltas forwarded chunk by chunk), content parts, developer role,
// unknown fields per deployment policy, validation 400s naming `param`, size bounds, and tool
// definitions and image parts held in the budget. Lean path (API clients) and full pipeline (an Origin
// header takes it) answer alike.
import OpenAI from 'openai';
import { GatewayFixture, providersDoc, startGatewayFixture } from './gateway-fixture';

jest.setTimeout(120_000);

const PATHS: Array<[string, Record<string, string>]> = [
  ['lean', {}],
  ['full', { origin: 'https://site.example' }],
];
const WEATHER = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Current weather of a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
};
// 1x1 PNG.
const PNG =
  'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';

describe('chat completions: full request and response shape', () => {
  let f: GatewayFixture;
  let key: string;

  beforeAll(async () => {
    f = await startGatewayFixture({ AI_COMPLETION_RESERVE_TOKENS: '50' }, ({ openai, backup, anthropic }) => {
      const doc = providersDoc(openai, backup, anthropic);
      // A deployment whose upstream refuses unknown fields.
      Object.assign(doc.deployments[1], { weight: 1, unknownFields: 'drop' });
      return doc;
    });
    key = (await f.createKey({ name: 'shape' })).key;
  });
  afterAll(() => f?.close());
  beforeEach(() => {
    for (const u of [f.openai, f.openaiBackup, f.anthropic]) {
      const apiKey = u.behaviour.apiKey;
      u.reset();
      u.behaviour.apiKey = apiKey;
    }
  });

  async function post(body: unknown, headers: Record<string, string> = {}, k = key) {
    const res = await fetch(`${f.gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${k}`, 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });
    const text = await res.text();
    return {
      status: res.status,
      body: text && res.headers.get('content-type')?.includes('json') ? JSON.parse(text) : text,
    };
  }
  const events = (sse: string) =>
    sse
      .split('\n\n')
      .filter((e) => e.startsWith('data: ') && e !== 'data: [DONE]')
      .map((e) => JSON.parse(e.slice(6)));

  describe('tools round trip', () => {
    it('non-streamed: tool_calls with content null and finish_reason tool_calls, then the tool result answered (both paths)', async () => {
      for (const [, headers] of PATHS) {
        f.openai.requests.length = 0;
        const ask = {
          model: 'vendor-gpt-4',
          tools: [WEATHER],
          tool_choice: 'auto',
          parallel_tool_calls: false,
          messages: [
            { role: 'developer', content: 'Use tools.' },
            { role: 'user', content: 'Paris' },
          ],
        };
        const first = await post(ask, headers);
        expect(first.status).toBe(200);
        const choice = first.body.choices[0];
        expect(choice.finish_reason).toBe('tool_calls');
        expect(choice.message.content).toBeNull();
        expect(choice.message.tool_calls).toEqual([
          {
            id: expect.any(String),
            type: 'function',
            function: { name: 'get_weather', arguments: '{"city":"Paris"}' },
          },
        ]);
        // The upstream got the tools, tool_choice and parallel_tool_calls as sent.
        expect(f.openai.requests[0].body).toMatchObject({
          tools: [WEATHER],
          tool_choice: 'auto',
          parallel_tool_calls: false,
        });
        // Usage when the upstream sends none is our own count, tool call included (checked by the metering test below).
        const second = await post(
          {
            ...ask,
            messages: [
              ...ask.messages,
              { role: 'assistant', content: null, tool_calls: choice.message.tool_calls },
              { role: 'tool', tool_call_id: choice.message.tool_calls[0].id, content: '{"temperature_c":18}' },
            ],
          },
          headers,
        );
        expect(second.status).toBe(200);
        expect(second.body.choices[0]).toMatchObject({
          finish_reason: 'stop',
          message: { role: 'assistant', content: 'Tool result: {"temperature_c":18}' },
        });
        expect(f.openai.requests[1].body.messages.slice(2)).toEqual([
          { role: 'assistant', content: null, tool_calls: choice.message.tool_calls },
          { role: 'tool', tool_call_id: choice.message.tool_calls[0].id, content: '{"temperature_c":18}' },
        ]);
        // LangChain's ToolMessage also carries the tool's name: accepted and passed on.
        const named = await post(
          {
            ...ask,
            messages: [
              ...ask.messages,
              { role: 'assistant', content: null, tool_calls: choice.message.tool_calls },
              { role: 'tool', name: 'get_weather', tool_call_id: choice.message.tool_calls[0].id, content: 'ok' },
            ],
          },
          headers,
        );
        expect(named.status).toBe(200);
        expect(f.openai.requests[2].body.messages[3]).toEqual({
          role: 'tool',
          name: 'get_weather',
          tool_call_id: choice.message.tool_calls[0].id,
          content: 'ok',
        });
      }
    });

    it('streamed: every tool_calls delta the upstream sent is forwarded as its own chunk, never reassembled (both paths)', async () => {
      for (const [, headers] of PATHS) {
        const res = await post(
          {
            model: 'vendor-gpt-4',
            stream: true,
            tools: [WEATHER],
            tool_choice: { type: 'function', function: { name: 'get_weather' } },
            messages: [{ role: 'user', content: 'Paris' }],
          },
          headers,
        );
        expect(res.status).toBe(200);
        const chunks = events(res.body);
        const deltas = chunks.flatMap((c) => c.choices.flatMap((ch: any) => ch.delta.tool_calls ?? []));
        // '{"city":"Paris"}' in 8-character fragments: the first delta names the call, then 2 fragments.
        expect(deltas).toEqual([
          { index: 0, id: expect.any(String), type: 'function', function: { name: 'get_weather', arguments: '' } },
          { index: 0, function: { arguments: '{"city":' } },
          { index: 0, function: { arguments: '"Paris"}' } },
        ]);
        expect(chunks.filter((c) => c.choices[0]?.delta?.tool_calls)).toHaveLength(3);
        expect(chunks[chunks.length - 1].choices[0].finish_reason).toBe('tool_calls');
      }
    });

    it('the openai SDK runs a two-step tool loop through the gateway, streamed and not', async () => {
      const sdk = new OpenAI({ apiKey: key, baseURL: `${f.gw.url}/v1`, maxRetries: 0 });
      for (const stream of [false, true]) {
        const calls: unknown[] = [];
        const runner = sdk.chat.completions.runTools({
          model: 'vendor-gpt-4',
          stream,
          messages: [{ role: 'user', content: 'Lyon' }],
          tools: [
            {
              type: 'function',
              function: {
                name: 'get_weather',
                description: 'weather',
                parameters: WEATHER.function.parameters,
                parse: JSON.parse,
                function: (a: { city: string }) => (calls.push(a), `sunny in ${a.city}`),
              },
            },
          ],
        } as any);
        const text = await runner.finalContent();
        expect(calls).toEqual([{ city: 'Lyon' }]);
        expect(text).toBe('Tool result: sunny in Lyon');
      }
    });

    it('legacy functions / function_call are accepted and forwarded', async () => {
      const res = await post({
        model: 'vendor-gpt-4',
        functions: [WEATHER.function],
        function_call: 'auto',
        messages: [
          { role: 'user', content: 'x' },
          { role: 'assistant', content: null, function_call: { name: 'get_weather', arguments: '{}' } },
          { role: 'function', name: 'get_weather', content: 'sunny' },
        ],
      });
      expect(res.status).toBe(200);
      expect(f.openai.requests[0].body).toMatchObject({ functions: [WEATHER.function], function_call: 'auto' });
    });
  });

  it('content parts (text, image URL, image data URL, input_audio, file) reach an OpenAI upstream unchanged; developer role too', async () => {
    const content = [
      { type: 'text', text: 'What is this?' },
      { type: 'image_url', image_url: { url: 'https://example.com/cat.png', detail: 'low' } },
      { type: 'image_url', image_url: { url: PNG } },
      {
        type: 'input_audio',
        input_audio: { data: 'UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA=', format: 'wav' },
      },
      { type: 'file', file: { filename: 'a.pdf', file_data: 'data:application/pdf;base64,JVBERi0xLjQK' } },
    ];
    for (const [, headers] of PATHS) {
      f.openai.requests.length = 0;
      const messages = [
        { role: 'developer', content: 'Be brief.' },
        { role: 'user', content },
      ];
      const res = await post({ model: 'vendor-gpt-4', messages }, headers);
      expect(res.status).toBe(200);
      expect(res.body.choices[0].message.content).toBe('Echo: What is this?');
      expect(f.openai.requests[0].body.messages).toEqual(messages);
    }
  });

  describe('newer and unknown fields', () => {
    const newer = {
      store: false,
      metadata: { session: 's1' },
      reasoning_effort: 'low',
      service_tier: 'auto',
      prompt_cache_key: 'k1',
      logit_bias: { '50256': -100 },
      logprobs: true,
      top_logprobs: 2,
      modalities: ['text'],
      prediction: { type: 'content', content: 'hi there' },
      verbosity: 'low',
      seed: 7,
      user: 'u1',
      stop: ['\n\n'],
      n: 1,
      safety_identifier: 'h1',
      response_format: { type: 'json_schema', json_schema: { name: 'a', schema: { type: 'object' } } },
    };

    it('every known field of the reference is accepted and forwarded to an OpenAI-type upstream (both paths)', async () => {
      for (const [, headers] of PATHS) {
        f.openai.requests.length = 0;
        const res = await post(
          {
            model: 'vendor-gpt-4',
            stream: true,
            stream_options: { include_usage: true, include_obfuscation: false },
            messages: [{ role: 'user', content: 'hi' }],
            ...newer,
          },
          headers,
        );
        expect(res.status).toBe(200);
        expect(f.openai.requests[0].body).toMatchObject({
          ...newer,
          stream_options: { include_usage: true, include_obfuscation: false },
        });
      }
    });

    it('an unknown top-level field is forwarded to an OpenAI-type upstream, dropped for a deployment with unknownFields: drop and for Anthropic', async () => {
      const extra = { future_field: { mode: 'x', list: [1, 2] } };
      for (const [, headers] of PATHS) {
        f.openai.requests.length = 0;
        f.openaiBackup.requests.length = 0;
        f.anthropic.requests.length = 0;
        expect(
          (await post({ model: 'vendor-gpt-4', messages: [{ role: 'user', content: 'hi' }], ...extra }, headers))
            .status,
        ).toBe(200);
        expect(f.openai.requests[0].body.future_field).toEqual(extra.future_field);
        expect(
          (await post({ model: 'vendor-llama-70b', messages: [{ role: 'user', content: 'hi' }], ...extra }, headers))
            .status,
        ).toBe(200);
        expect(f.openaiBackup.requests[0].body).not.toHaveProperty('future_field');
        expect(f.openaiBackup.requests[0].body.messages).toEqual([{ role: 'user', content: 'hi' }]);
        expect(
          (await post({ model: 'vendor-claude-3', messages: [{ role: 'user', content: 'hi' }], ...extra }, headers))
            .status,
        ).toBe(200);
        expect(f.anthropic.requests[0].body).not.toHaveProperty('future_field');
      }
    });
  });

  describe('validation: 400 naming the field, same on both paths', () => {
    const m = (extra: Record<string, unknown>) => ({
      model: 'vendor-gpt-4',
      messages: [{ role: 'user', content: 'hi' }],
      ...extra,
    });
    const deep = (n: number): any =>
      n === 0 ? { type: 'string' } : { type: 'object', properties: { a: deep(n - 1) } };
    const cases: Array<[string, unknown, string]> = [
      ['unknown role', m({ messages: [{ role: 'robot', content: 'x' }] }), 'messages.0.role'],
      ['content a number', m({ messages: [{ role: 'user', content: 5 }] }), 'messages.0.content'],
      ['user content null', m({ messages: [{ role: 'user', content: null }] }), 'messages.0.content'],
      [
        'image part without url',
        m({ messages: [{ role: 'user', content: [{ type: 'image_url', image_url: {} }] }] }),
        'messages.0.content.0.image_url.url',
      ],
      [
        'image part bad detail',
        m({
          messages: [
            { role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://x/y.png', detail: 'max' } }] },
          ],
        }),
        'messages.0.content.0.image_url.detail',
      ],
      [
        'image part on a system message',
        m({ messages: [{ role: 'system', content: [{ type: 'image_url', image_url: { url: 'https://x/y.png' } }] }] }),
        'messages.0.content.0.type',
      ],
      [
        'unknown part type',
        m({ messages: [{ role: 'user', content: [{ type: 'video', video: {} }] }] }),
        'messages.0.content.0.type',
      ],
      [
        'file by id',
        m({ messages: [{ role: 'user', content: [{ type: 'file', file: { file_id: 'file-1' } }] }] }),
        'messages.0.content.0.file.file_id',
      ],
      [
        'tool message without tool_call_id',
        m({ messages: [{ role: 'tool', content: 'x' }] }),
        'messages.0.tool_call_id',
      ],
      ['assistant without content or tool_calls', m({ messages: [{ role: 'assistant' }] }), 'messages.0.content'],
      [
        'tool_call without arguments',
        m({
          messages: [
            { role: 'assistant', content: null, tool_calls: [{ id: 'c', type: 'function', function: { name: 'f' } }] },
          ],
        }),
        'messages.0.tool_calls.0.function.arguments',
      ],
      ['unknown message field', m({ messages: [{ role: 'user', content: 'x', colour: 'red' }] }), 'messages.0.colour'],
      ['bad tool name', m({ tools: [{ type: 'function', function: { name: 'has space' } }] }), 'tools.0.function.name'],
      ['bad tool type', m({ tools: [{ type: 'retrieval' }] }), 'tools.0.type'],
      ['bad tool_choice', m({ tools: [WEATHER], tool_choice: 'sometimes' }), 'tool_choice'],
      ['tool_choice without tools', m({ tool_choice: 'required' }), 'tool_choice'],
      ['parallel_tool_calls not boolean', m({ tools: [WEATHER], parallel_tool_calls: 'yes' }), 'parallel_tool_calls'],
      ['temperature out of range', m({ temperature: 5 }), 'temperature'],
      ['bad reasoning_effort', m({ reasoning_effort: 'extreme' }), 'reasoning_effort'],
      ['top_logprobs without logprobs', m({ top_logprobs: 3 }), 'top_logprobs'],
      ['logit_bias out of range', m({ logit_bias: { '1': 500 } }), 'logit_bias.1'],
      ['bad response_format', m({ response_format: { type: 'yaml' } }), 'response_format.type'],
      ['unknown field that could lengthen the answer', m({ min_tokens: 5000 }), 'min_tokens'],
      ['unknown best_of', m({ best_of: 8 }), 'best_of'],
      ['unknown reasoning object', m({ reasoning: { max_tokens: 100000 } }), 'reasoning'],
      ['unknown router-style models list', m({ models: ['vendor-gpt-4', 'other/expensive'] }), 'models'],
      [
        'length lever nested in an unknown field',
        m({ vendor_opts: { generation: { max_tokens: 100000 } } }),
        'vendor_opts.generation.max_tokens',
      ],
      [
        'thinking budget nested in an unknown field',
        m({ vendor_opts: [{ thinking_budget: 30000 }] }),
        'vendor_opts.0.thinking_budget',
      ],
      ['service_tier priority (not metered)', m({ service_tier: 'priority' }), 'service_tier'],
      [
        'web_search_options (not metered)',
        m({ web_search_options: { search_context_size: 'low' } }),
        'web_search_options',
      ],
      [
        'audio output modality (not metered)',
        m({ modalities: ['text', 'audio'], audio: { voice: 'alloy', format: 'wav' } }),
        'modalities',
      ],
      ['audio output parameters (not metered)', m({ audio: { voice: 'alloy', format: 'wav' } }), 'audio'],
      [
        'too many tools',
        m({ tools: Array.from({ length: 129 }, (_, i) => ({ type: 'function', function: { name: `t${i}` } })) }),
        'tools',
      ],
      [
        'too many parts',
        m({ messages: [{ role: 'user', content: Array.from({ length: 257 }, () => ({ type: 'text', text: 'a' })) }] }),
        'messages.0.content',
      ],
      [
        'too many tool_calls',
        m({
          messages: [
            {
              role: 'assistant',
              content: null,
              tool_calls: Array.from({ length: 129 }, (_, i) => ({
                id: `c${i}`,
                type: 'function',
                function: { name: 'f', arguments: '{}' },
              })),
            },
          ],
        }),
        'messages.0.tool_calls',
      ],
      [
        'too many messages',
        m({ messages: Array.from({ length: 4097 }, () => ({ role: 'user', content: 'a' })) }),
        'messages',
      ],
      [
        'schema too deep',
        m({ tools: [{ type: 'function', function: { name: 'f', parameters: deep(20) } }] }),
        'tools.0.function.parameters',
      ],
      [
        'response_format schema too deep',
        m({ response_format: { type: 'json_schema', json_schema: { name: 'a', schema: deep(20) } } }),
        'response_format.json_schema.schema',
      ],
      ['unknown field too large', m({ future_blob: 'x'.repeat(40_000) }), 'future_blob'],
      ['unknown field too deep', m({ future_deep: deep(5) }), 'future_deep'],
    ];

    it.each(cases)('%s -> 400 param', async (_name, body, param) => {
      const answers = [];
      for (const [, headers] of PATHS) {
        const res = await post(body, headers);
        expect({ status: res.status, param: res.body?.error?.param, type: res.body?.error?.type }).toEqual({
          status: 400,
          param,
          type: 'invalid_request_error',
        });
        answers.push(res.body);
      }
      expect(answers[1]).toEqual(answers[0]);
      expect(f.openai.requests).toHaveLength(0);
    });

    it('n > 1 and logprobs stay refused for an Anthropic upstream, naming the field', async () => {
      for (const [field, extra] of [
        ['n', { n: 2 }],
        ['logprobs', { logprobs: true }],
      ] as const) {
        const res = await post({ model: 'vendor-claude-3', ...extra, messages: [{ role: 'user', content: 'hi' }] });
        expect({ status: res.status, param: res.body?.error?.param }).toEqual({ status: 400, param: field });
      }
      expect(f.anthropic.requests).toHaveLength(0);
    });
  });

  describe('budgets: tool definitions and image parts are held in the reservation', () => {
    // 1 yuan per 1000 prompt tokens: a budget of 0.3 yuan holds about 250 prompt tokens.
    it('a key that can pay for the plain call cannot start one whose tools or images it could not pay for', async () => {
      const { key: small } = await f.createKey({ name: 'shape-budget', budget_yuan: 0.3 });
      const base = { model: 'vendor-gpt-4', max_completion_tokens: 1, messages: [{ role: 'user', content: 'hi' }] };
      expect((await post(base, {}, small)).status).toBe(200);
      const bigTool = {
        type: 'function',
        function: { name: 'big', description: 'word '.repeat(400), parameters: { type: 'object' } },
      };
      const withImage = {
        ...base,
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'hi' },
              { type: 'image_url', image_url: { url: 'https://example.com/a.png', detail: 'high' } },
            ],
          },
        ],
      };
      for (const [, headers] of PATHS) {
        for (const body of [{ ...base, tools: [bigTool] }, withImage]) {
          const res = await post(body, headers, small);
          expect({ status: res.status, code: res.body?.error?.code }).toEqual({
            status: 429,
            code: 'insufficient_quota',
          });
        }
        // detail low is 85 tokens: affordable.
        const low = await post(
          {
            ...base,
            messages: [
              {
                role: 'user',
                content: [{ type: 'image_url', image_url: { url: 'https://example.com/a.png', detail: 'low' } }],
              },
            ],
          },
          headers,
          small,
        );
        expect(low.status).toBe(200);
      }
    });
  });
});
