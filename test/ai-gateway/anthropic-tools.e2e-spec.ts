// Tools, content parts and roles through the gateway onto an Anthropic upstream,
// driven by the official `openai` SDK. The fake Messages API validates requests as Anthropic does
// (alternating roles, tool_result ids matching the previous tool_use, no unknown fields), so a
// translation mistake is a 400 here.
import OpenAI from 'openai';
import { GatewayFixture, startGatewayFixture } from './gateway-fixture';

const lookup = {
  type: 'function' as const,
  function: {
    name: 'lookup_capital',
    description: 'Capital city of a country',
    parameters: { type: 'object', properties: { country: { type: 'string' } }, required: ['country'] },
  },
};

describe('AI gateway: tools and parts on an Anthropic upstream (openai SDK)', () => {
  let f: GatewayFixture;
  let client: OpenAI;

  beforeAll(async () => {
    f = await startGatewayFixture();
    const key = (await f.createKey({ name: 'anthropic-tools' })).key;
    client = new OpenAI({ apiKey: key, baseURL: `${f.gw.url}/v1`, maxRetries: 0, timeout: 10_000 });
  });
  afterAll(() => f?.close());
  beforeEach(() => {
    const apiKey = f.anthropic.behaviour.apiKey;
    f.anthropic.reset();
    f.anthropic.behaviour.apiKey = apiKey;
  });

  it('runs a two-step tool loop (not streamed): tool_calls out, tool result in, answer', async () => {
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'France' }];
    const first = await client.chat.completions.create({
      model: 'vendor-claude-3',
      messages,
      tools: [lookup],
      tool_choice: 'required',
    });
    const choice = first.choices[0];
    expect(choice.finish_reason).toBe('tool_calls');
    expect(choice.message.content).toBeNull();
    expect(choice.message.tool_calls).toEqual([
      {
        id: expect.stringMatching(/^toolu_/),
        type: 'function',
        function: { name: 'lookup_capital', arguments: '{"country":"France"}' },
      },
    ]);
    expect(f.anthropic.requests[0].body).toMatchObject({
      tools: [
        { name: 'lookup_capital', description: 'Capital city of a country', input_schema: lookup.function.parameters },
      ],
      tool_choice: { type: 'any' },
    });

    const call = choice.message.tool_calls![0] as OpenAI.ChatCompletionMessageFunctionToolCall;
    messages.push(choice.message, { role: 'tool', tool_call_id: call.id, content: 'Paris' });
    const second = await client.chat.completions.create({ model: 'vendor-claude-3', messages, tools: [lookup] });
    expect(second.choices[0].message.content).toBe('Result: Paris');
    expect(second.choices[0].finish_reason).toBe('stop');
    expect(f.anthropic.requests[1].body.messages).toEqual([
      { role: 'user', content: 'France' },
      {
        role: 'assistant',
        content: [{ type: 'tool_use', id: call.id, name: 'lookup_capital', input: { country: 'France' } }],
      },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: 'Paris' }] },
    ]);
  });

  it('continues a tool loop begun on another provider whose call ids Anthropic refuses (functions.x:0)', async () => {
    // As Kimi/Moonshot name calls; the history reaches Anthropic after a failover or a model switch.
    const id = 'functions.lookup_capital:0';
    const res = await client.chat.completions.create({
      model: 'vendor-claude-3',
      tools: [lookup],
      messages: [
        { role: 'user', content: 'France' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            { id, type: 'function', function: { name: 'lookup_capital', arguments: '{"country":"France"}' } },
          ],
        },
        { role: 'tool', tool_call_id: id, content: 'Paris' },
      ],
    });
    expect(res.choices[0].message.content).toBe('Result: Paris');
    const [, use, result] = f.anthropic.requests[0].body.messages;
    expect(use.content[0].id).toMatch(/^functions_lookup_capital_0_[0-9a-f]{12}$/);
    expect(result.content[0].tool_use_id).toBe(use.content[0].id);
  });

  it("runs the SDK's own streamed tool runner against Anthropic, two tools in parallel", async () => {
    f.anthropic.behaviour.parallelToolUse = 2;
    const ran: string[] = [];
    const runner = client.chat.completions.runTools({
      model: 'vendor-claude-3',
      stream: true,
      messages: [{ role: 'user', content: 'Peru' }],
      tools: [
        {
          type: 'function',
          function: {
            name: 'lookup_capital',
            description: 'Capital city',
            parameters: lookup.function.parameters,
            parse: JSON.parse,
            function: (a: { country: string }) => (ran.push(`capital:${a.country}`), 'Lima'),
          },
        },
        {
          type: 'function',
          function: {
            name: 'lookup_currency',
            description: 'Currency',
            parameters: { type: 'object', properties: { country: { type: 'string' } } },
            parse: JSON.parse,
            function: (a: { country: string }) => (ran.push(`currency:${a.country}`), 'Sol'),
          },
        },
      ],
    });
    const deltas: any[] = [];
    runner.on('chunk', (c) => {
      for (const tc of c.choices[0]?.delta?.tool_calls ?? []) deltas.push(tc);
    });
    const answer = await runner.finalContent();
    expect(answer).toBe('Result: Lima; Sol');
    expect(ran).toEqual(['capital:Peru', 'currency:Peru']);
    // Fragments arrive one by one (never reassembled), tool indexes 0 and 1 although Anthropic's block
    // indexes are 1 and 2 (a text block comes first).
    const args0 = deltas.filter((d) => d.index === 0 && d.function?.arguments).map((d) => d.function.arguments);
    expect(args0.length).toBeGreaterThan(1);
    expect(args0.join('')).toBe('{"country":"Peru"}');
    expect(deltas.filter((d) => d.id).map((d) => [d.index, d.function.name])).toEqual([
      [0, 'lookup_capital'],
      [1, 'lookup_currency'],
    ]);
    const second = f.anthropic.requests[1].body;
    expect(second.messages[1].content.map((b: any) => b.type)).toEqual(['text', 'tool_use', 'tool_use']);
    expect(second.messages[2].content.map((b: any) => b.type)).toEqual(['tool_result', 'tool_result']);
  });

  it('streams a tool call with parallel_tool_calls: false as disable_parallel_tool_use', async () => {
    f.anthropic.behaviour.parallelToolUse = 2;
    const stream = await client.chat.completions.create({
      model: 'vendor-claude-3',
      stream: true,
      parallel_tool_calls: false,
      messages: [{ role: 'user', content: 'Chile' }],
      tools: [lookup, { ...lookup, function: { ...lookup.function, name: 'other' } }],
    });
    const ids: string[] = [];
    let finish: string | null = null;
    for await (const c of stream) {
      for (const tc of c.choices[0]?.delta?.tool_calls ?? []) if (tc.id) ids.push(tc.id);
      finish = c.choices[0]?.finish_reason ?? finish;
    }
    expect(ids).toHaveLength(1);
    expect(finish).toBe('tool_calls');
    expect(f.anthropic.requests[0].body.tool_choice).toEqual({ type: 'auto', disable_parallel_tool_use: true });
  });

  it('sends image parts as image blocks and developer messages as system', async () => {
    const res = await client.chat.completions.create({
      model: 'vendor-claude-3',
      messages: [
        { role: 'developer', content: 'Describe images.' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What is this' },
            { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=', detail: 'low' } },
            { type: 'image_url', image_url: { url: 'https://example.com/cat.jpg' } },
          ],
        },
      ],
    });
    expect(res.choices[0].message.content).toBe('Echo: What is this');
    expect(f.anthropic.requests[0].body.system).toBe('Describe images.');
    expect(f.anthropic.requests[0].body.messages).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'What is this' },
          { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } },
          { type: 'image', source: { type: 'url', url: 'https://example.com/cat.jpg' } },
        ],
      },
    ]);
  });

  it('never forwards a field Anthropic does not know (the upstream would refuse it)', async () => {
    const res = await client.chat.completions.create({
      model: 'vendor-claude-3',
      messages: [{ role: 'user', content: 'hi there' }],
      store: true,
      metadata: { app: 'x' },
      seed: 7,
      // A field newer than the gateway, as an SDK may send it.
      ...({ brand_new_field: { a: 1 } } as object),
    });
    expect(res.choices[0].message.content).toBe('Echo: hi there');
    const sent = f.anthropic.requests[0].body;
    expect(Object.keys(sent).sort()).toEqual(['max_tokens', 'messages', 'model']);
  });

  it('answers 400 naming the field for what Anthropic cannot honour', async () => {
    const fails = async (extra: Record<string, unknown>, messages: unknown[] = [{ role: 'user', content: 'x' }]) => {
      const err = await client.chat.completions
        .create({ model: 'vendor-claude-3', messages, ...extra } as any)
        .catch((e) => e);
      expect(err).toBeInstanceOf(OpenAI.BadRequestError);
      return err.error;
    };
    expect(await fails({ n: 2 })).toMatchObject({ param: 'n', type: 'invalid_request_error' });
    expect((await fails({ logprobs: true })).param).toBe('logprobs');
    // Anthropic refuses whitespace-only stop sequences; dropping one would change the answer.
    expect((await fails({ stop: ['\n\n'] })).param).toBe('stop');
    expect(
      (
        await fails({}, [
          { role: 'user', content: [{ type: 'input_audio', input_audio: { data: 'UklGRg==', format: 'wav' } }] },
        ])
      ).param,
    ).toBe('messages[0].content[0].type');
    const badArgs = [
      { role: 'user', content: 'x' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'c1', type: 'function', function: { name: 'lookup_capital', arguments: '{"country":' } }],
      },
      { role: 'tool', tool_call_id: 'c1', content: 'r' },
    ];
    expect((await fails({ tools: [lookup] }, badArgs)).param).toBe('messages[1].tool_calls[0].function.arguments');
    expect(f.anthropic.requests).toHaveLength(0);
  });
});
