import { startFakeAnthropic, FakeUpstream } from '../../../test/support/upstreams';
import {
  AnthropicClient,
  AnthropicMessage,
  anthropicEventsToChunks,
  anthropicToolId,
  finishReasonOf,
  fromAnthropicMessage,
  toAnthropicRequest,
  UnsupportedRequestError,
} from './anthropic-client';
import { ChatCompletionChunk, UpstreamError } from './types';

describe('Anthropic translation', () => {
  it('moves system prompts out, merges consecutive roles, maps parameters', () => {
    const out = toAnthropicRequest(
      {
        model: 'vendor-claude-3',
        messages: [
          { role: 'system', content: 'Be brief.' },
          { role: 'user', content: 'Hi' },
          { role: 'user', content: [{ type: 'text', text: 'there' }] },
          { role: 'assistant', content: 'Hello' },
          { role: 'developer', content: 'Answer in English.' },
          { role: 'user', content: 'Bye' },
        ],
        temperature: 1.6,
        top_p: 0.9,
        stop: 'END',
        max_tokens: 50,
        user: 'u1',
        presence_penalty: 1,
      },
      'claude-3-5-sonnet',
    );
    expect(out).toEqual({
      model: 'claude-3-5-sonnet',
      system: 'Be brief.\n\nAnswer in English.',
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Hi' },
            { type: 'text', text: 'there' },
          ],
        },
        { role: 'assistant', content: 'Hello' },
        { role: 'user', content: 'Bye' },
      ],
      max_tokens: 50,
      temperature: 1,
      top_p: 0.9,
      stop_sequences: ['END'],
      metadata: { user_id: 'u1' },
    });
  });

  it('merges a long run of same-role messages into one, blocks in order', () => {
    const messages = Array.from({ length: 4096 }, (_, i) => ({
      role: 'user' as const,
      content: i % 2 ? `m${i}` : [{ type: 'text', text: `m${i}` }],
    }));
    const out = toAnthropicRequest({ model: 'm', messages: [...messages, { role: 'assistant', content: 'ok' }] }, 'u');
    expect(out.messages).toHaveLength(2);
    expect(out.messages[0].content).toEqual(messages.map((_, i) => ({ type: 'text', text: `m${i}` })));
  });

  it('defaults max_tokens, turns data-URL images into base64 sources, refuses n > 1', () => {
    const out = toAnthropicRequest(
      {
        model: 'm',
        messages: [
          { role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } }] },
        ],
      },
      'u',
    );
    expect(out.max_tokens).toBe(4096);
    expect(out.messages[0].content).toEqual([
      { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAAA' } },
    ]);
    expect(() => toAnthropicRequest({ model: 'm', messages: [{ role: 'user', content: 'x' }], n: 2 }, 'u')).toThrow(
      UnsupportedRequestError,
    );
  });

  it('maps a message back with stop reason and usage', () => {
    const res = fromAnthropicMessage(
      {
        id: 'msg_1',
        type: 'message',
        role: 'assistant',
        model: 'c',
        content: [
          { type: 'text', text: 'Hel' },
          { type: 'text', text: 'lo' },
        ],
        stop_reason: 'max_tokens',
        usage: { input_tokens: 10, output_tokens: 3, cache_read_input_tokens: 2 },
      },
      'vendor-claude-3',
      123,
    );
    expect(res).toEqual({
      id: 'chatcmpl-msg_1',
      object: 'chat.completion',
      created: 123,
      model: 'vendor-claude-3',
      choices: [{ index: 0, message: { role: 'assistant', content: 'Hello' }, finish_reason: 'length' }],
      // Cache reads count in the prompt and are reported as OpenAI's cached_tokens (writes as cache_write_tokens).
      usage: {
        prompt_tokens: 12,
        completion_tokens: 3,
        total_tokens: 15,
        prompt_tokens_details: { cached_tokens: 2, cache_write_tokens: 0 },
      },
    });
  });

  it('turns stream events into OpenAI chunks ending with a usage chunk', async () => {
    async function* events() {
      yield {
        event: 'message_start',
        data: JSON.stringify({
          type: 'message_start',
          message: { id: 'msg_9', usage: { input_tokens: 7, output_tokens: 1 } },
        }),
      };
      yield { event: 'ping', data: '{"type":"ping"}' };
      yield {
        event: 'content_block_delta',
        data: JSON.stringify({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hi' } }),
      };
      yield {
        event: 'content_block_delta',
        data: JSON.stringify({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: '!' } }),
      };
      yield {
        event: 'message_delta',
        data: JSON.stringify({
          type: 'message_delta',
          delta: { stop_reason: 'end_turn' },
          usage: { output_tokens: 2 },
        }),
      };
      yield { event: 'message_stop', data: '{"type":"message_stop"}' };
    }
    const chunks: ChatCompletionChunk[] = [];
    for await (const c of anthropicEventsToChunks(events(), 'vendor-claude-3')) chunks.push(c);
    expect(chunks.map((c) => c.choices[0]?.delta)).toEqual([
      { role: 'assistant', content: '' },
      { content: 'Hi' },
      { content: '!' },
      {},
      undefined,
    ]);
    expect(chunks[3].choices[0].finish_reason).toBe('stop');
    expect(chunks[4]).toMatchObject({
      id: 'chatcmpl-msg_9',
      choices: [],
      usage: { prompt_tokens: 7, completion_tokens: 2, total_tokens: 9 },
    });
    expect(chunks[4].usage?.prompt_tokens_details).toBeUndefined();
  });

  it('reports streamed cache reads and writes as cached_tokens / cache_write_tokens (message_delta figures win)', async () => {
    async function* events() {
      yield {
        event: 'message_start',
        data: JSON.stringify({
          type: 'message_start',
          message: {
            id: 'msg_c',
            usage: { input_tokens: 5, output_tokens: 1, cache_read_input_tokens: 3, cache_creation_input_tokens: 0 },
          },
        }),
      };
      yield {
        event: 'content_block_delta',
        data: JSON.stringify({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hi' } }),
      };
      yield {
        event: 'message_delta',
        data: JSON.stringify({
          type: 'message_delta',
          delta: { stop_reason: 'end_turn' },
          usage: { output_tokens: 2, cache_creation_input_tokens: 4 },
        }),
      };
      yield { event: 'message_stop', data: '{"type":"message_stop"}' };
    }
    const chunks: ChatCompletionChunk[] = [];
    for await (const c of anthropicEventsToChunks(events(), 'vendor-claude-3')) chunks.push(c);
    expect(chunks[chunks.length - 1].usage).toEqual({
      prompt_tokens: 12,
      completion_tokens: 2,
      total_tokens: 14,
      prompt_tokens_details: { cached_tokens: 3, cache_write_tokens: 4 },
    });
  });

  it('fails a stream that ends without message_stop, and surfaces error events', async () => {
    async function* cut() {
      yield { event: 'message_start', data: JSON.stringify({ type: 'message_start', message: { id: 'm' } }) };
    }
    const drain = async (it: AsyncIterable<unknown>) => {
      for await (const _ of it) void _;
    };
    await expect(drain(anthropicEventsToChunks(cut(), 'x'))).rejects.toThrow('ended before message_stop');
    async function* err() {
      yield {
        event: 'error',
        data: JSON.stringify({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }),
      };
    }
    await expect(drain(anthropicEventsToChunks(err(), 'x'))).rejects.toThrow('Overloaded');
  });
});

describe('AnthropicClient against a Messages API server', () => {
  let up: FakeUpstream;
  let client: AnthropicClient;
  beforeAll(async () => {
    up = await startFakeAnthropic();
    client = new AnthropicClient({
      baseUrl: up.url,
      apiKey: 'sk-ant-test',
      headers: {},
      timeoutMs: 2000,
      connections: 4,
    });
  });
  afterAll(async () => {
    await client.close();
    await up.close();
  });
  beforeEach(() => {
    up.reset();
    up.behaviour.apiKey = 'sk-ant-test';
  });

  it('completes a chat with headers and translation', async () => {
    const res = await client.chat({
      model: 'claude-x',
      messages: [
        { role: 'system', content: 'sys' },
        { role: 'user', content: 'hello world' },
      ],
    });
    expect(res.choices[0].message.content).toBe('Echo: hello world');
    expect(res.usage).toEqual({ prompt_tokens: 4, completion_tokens: 3, total_tokens: 7 });
    expect(up.requests[0].headers['anthropic-version']).toBe('2023-06-01');
    expect(up.requests[0].body).toMatchObject({ model: 'claude-x', system: 'sys', max_tokens: 4096 });
  });

  it('streams chunks with usage', async () => {
    const stream = await client.chatStream({ model: 'claude-x', messages: [{ role: 'user', content: 'a b c' }] });
    const text: string[] = [];
    let usage;
    for await (const c of stream) {
      if (c.choices[0]?.delta.content) text.push(c.choices[0].delta.content);
      if (c.usage) usage = c.usage;
    }
    expect(text.join('')).toBe('Echo: a b c');
    expect(usage).toEqual({ prompt_tokens: 4, completion_tokens: 4, total_tokens: 8 });
  });

  it('reports a 529 overload as a retryable upstream error with its message', async () => {
    up.behaviour.failTimes = 1;
    up.behaviour.failStatus = 529;
    const err = await client.chat({ model: 'c', messages: [{ role: 'user', content: 'x' }] }).catch((e) => e);
    expect(err).toBeInstanceOf(UpstreamError);
    expect(err).toMatchObject({ status: 529, retryable: true });
    expect(err.message).toContain('Internal server error (fake 529)');
  });

  it('fails a stream dropped mid-way', async () => {
    up.behaviour.dropAfterChunks = 1;
    const stream = await client.chatStream({ model: 'c', messages: [{ role: 'user', content: 'one two three' }] });
    const seen: string[] = [];
    const err = await (async () => {
      for await (const c of stream) if (c.choices[0]?.delta.content) seen.push(c.choices[0].delta.content);
    })().catch((e) => e);
    expect(seen).toEqual(['Echo: ']);
    expect(err).toBeInstanceOf(UpstreamError);
  });
});

describe('Anthropic tools, parts and roles', () => {
  const weather = {
    type: 'function',
    function: {
      name: 'get_weather',
      description: 'Weather for a city',
      parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
    },
  };
  const time = { type: 'function', function: { name: 'get_time' } };
  const base = { model: 'm', messages: [{ role: 'user' as const, content: 'Paris?' }] };
  const refused = (req: Record<string, unknown>) => {
    try {
      toAnthropicRequest({ ...base, ...req }, 'u');
    } catch (e) {
      return e as UnsupportedRequestError;
    }
    throw new Error('not refused');
  };

  it('maps function tools to input_schema tools, and every tool_choice form', () => {
    const out = toAnthropicRequest({ ...base, tools: [weather, time] }, 'u');
    expect(out.tools).toEqual([
      {
        name: 'get_weather',
        description: 'Weather for a city',
        input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
      },
      { name: 'get_time', input_schema: { type: 'object', properties: {} } },
    ]);
    expect(out.tool_choice).toBeUndefined();
    const choice = (tool_choice: unknown, extra: Record<string, unknown> = {}) =>
      toAnthropicRequest({ ...base, tools: [weather, time], tool_choice, ...extra }, 'u').tool_choice;
    expect(choice('auto')).toEqual({ type: 'auto' });
    expect(choice('required')).toEqual({ type: 'any' });
    expect(choice({ type: 'function', function: { name: 'get_time' } })).toEqual({ type: 'tool', name: 'get_time' });
    // 'none' keeps the tools (a history with tool blocks needs them) and forbids calling one.
    expect(choice('none')).toEqual({ type: 'none' });
    expect(toAnthropicRequest({ ...base, tools: [weather], tool_choice: 'none' }, 'u').tools).toHaveLength(1);
    expect(choice(undefined, { parallel_tool_calls: false })).toEqual({
      type: 'auto',
      disable_parallel_tool_use: true,
    });
    expect(choice('required', { parallel_tool_calls: false })).toEqual({
      type: 'any',
      disable_parallel_tool_use: true,
    });
    expect(choice('none', { parallel_tool_calls: false })).toEqual({ type: 'none' });
    expect(refused({ tools: [weather], tool_choice: { type: 'function', function: { name: 'nope' } } }).param).toBe(
      'tool_choice',
    );
    expect(refused({ tool_choice: 'required' }).param).toBe('tool_choice');
    expect(refused({ tools: [{ type: 'custom', custom: { name: 'x' } }] }).param).toBe('tools[0].type');
    expect(
      refused({ tools: [{ type: 'function', function: { name: 'x', parameters: { type: 'array' } } }] }).param,
    ).toBe('tools[0].function.parameters');
  });

  it('turns a tool loop history into tool_use and merged tool_result turns', () => {
    const out = toAnthropicRequest(
      {
        model: 'm',
        tools: [weather, time],
        messages: [
          { role: 'developer', content: 'Use tools.' },
          { role: 'user', content: 'Weather and time in Paris?' },
          {
            role: 'assistant',
            content: null,
            tool_calls: [
              { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
              { id: 'call_2', type: 'function', function: { name: 'get_time', arguments: '' } },
            ],
          },
          { role: 'tool', tool_call_id: 'call_1', content: '18C' },
          { role: 'tool', tool_call_id: 'call_2', content: [{ type: 'text', text: '12:00' }] },
          { role: 'user', content: 'Thanks' },
          {
            role: 'assistant',
            content: 'Let me check again.',
            tool_calls: [{ id: 'call_3', type: 'function', function: { name: 'get_time', arguments: '{}' } }],
          },
          { role: 'tool', tool_call_id: 'call_3', content: '12:01' },
        ],
      },
      'u',
    );
    expect(out.system).toBe('Use tools.');
    expect(out.messages).toEqual([
      { role: 'user', content: 'Weather and time in Paris?' },
      {
        role: 'assistant',
        content: [
          { type: 'tool_use', id: 'call_1', name: 'get_weather', input: { city: 'Paris' } },
          { type: 'tool_use', id: 'call_2', name: 'get_time', input: {} },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'call_1', content: '18C' },
          { type: 'tool_result', tool_use_id: 'call_2', content: [{ type: 'text', text: '12:00' }] },
          { type: 'text', text: 'Thanks' },
        ],
      },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'Let me check again.' },
          { type: 'tool_use', id: 'call_3', name: 'get_time', input: {} },
        ],
      },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_3', content: '12:01' }] },
    ]);
  });

  it("rewrites tool call ids Anthropic refuses (another provider's, after failover) the same way in tool_use and tool_result", () => {
    const foreign = ['functions.get_weather:0', 'functions.get_weather_0', 'call 1/ü'];
    const out = toAnthropicRequest(
      {
        model: 'm',
        tools: [weather],
        messages: [
          { role: 'user', content: 'Paris?' },
          {
            role: 'assistant',
            content: null,
            tool_calls: foreign.map((id) => ({
              id,
              type: 'function',
              function: { name: 'get_weather', arguments: '{}' },
            })),
          },
          ...foreign.map((id) => ({ role: 'tool' as const, tool_call_id: id, content: 'sunny' })),
        ],
      },
      'u',
    );
    const uses = (out.messages[1].content as any[]).map((b) => b.id);
    const results = (out.messages[2].content as any[]).map((b) => b.tool_use_id);
    expect(results).toEqual(uses);
    for (const id of uses) expect(id).toMatch(/^[a-zA-Z0-9_-]+$/);
    // Ids differing only in a refused character stay apart; valid ones pass unchanged.
    expect(uses[0]).not.toBe(uses[1]);
    expect(uses[1]).toMatch(/^functions_get_weather_0_[0-9a-f]{12}$/);
    expect(anthropicToolId('call_abc-XYZ_09')).toBe('call_abc-XYZ_09');
    expect(anthropicToolId('toolu_01A09q90qw90lq917835lq9')).toBe('toolu_01A09q90qw90lq917835lq9');
  });

  it('refuses tool call arguments that are not a JSON object, naming the field', () => {
    const history = (args: string) => ({
      messages: [
        { role: 'user', content: 'x' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'c', type: 'function', function: { name: 'get_weather', arguments: args } }],
        },
        { role: 'tool', tool_call_id: 'c', content: 'r' },
      ],
      tools: [weather],
    });
    for (const bad of ['{"city":', '[1]', '42']) {
      const e = refused(history(bad));
      expect(e).toBeInstanceOf(UnsupportedRequestError);
      expect(e).toMatchObject({ status: 400, param: 'messages[1].tool_calls[0].function.arguments' });
    }
    expect(refused({ messages: [{ role: 'tool', content: 'r' }] }).param).toBe('messages[0].tool_call_id');
  });

  it('declares the tools of a history sent without tools, with tool_choice none (Anthropic refuses tool blocks otherwise)', () => {
    const out = toAnthropicRequest(
      {
        model: 'm',
        messages: [
          { role: 'user', content: 'x' },
          {
            role: 'assistant',
            content: null,
            tool_calls: [{ id: 'c', type: 'function', function: { name: 'get_weather', arguments: '{}' } }],
          },
          { role: 'tool', tool_call_id: 'c', content: 'r' },
        ],
      },
      'u',
    );
    expect(out.tools).toEqual([{ name: 'get_weather', input_schema: { type: 'object' } }]);
    expect(out.tool_choice).toEqual({ type: 'none' });
  });

  it('maps image parts (data URL and https), PDF files, and refuses what Anthropic cannot take', () => {
    const out = toAnthropicRequest(
      {
        model: 'm',
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'Compare' },
              { type: 'image_url', image_url: { url: 'data:image/jpeg;base64,/9j/AA==', detail: 'high' } },
              { type: 'image_url', image_url: { url: 'https://example.com/cat.png' } },
              { type: 'file', file: { filename: 'a.pdf', file_data: 'data:application/pdf;base64,JVBERi0=' } },
            ],
          },
        ],
      },
      'u',
    );
    expect(out.messages[0].content).toEqual([
      { type: 'text', text: 'Compare' },
      { type: 'image', source: { type: 'base64', media_type: 'image/jpeg', data: '/9j/AA==' } },
      { type: 'image', source: { type: 'url', url: 'https://example.com/cat.png' } },
      { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: 'JVBERi0=' } },
    ]);
    const part = (p: Record<string, unknown>) => refused({ messages: [{ role: 'user', content: [p] }] }).param;
    expect(part({ type: 'input_audio', input_audio: { data: 'AAAA', format: 'wav' } })).toBe(
      'messages[0].content[0].type',
    );
    expect(part({ type: 'image_url', image_url: { url: 'data:image/bmp;base64,Qk0=' } })).toBe(
      'messages[0].content[0].image_url.url',
    );
    expect(part({ type: 'image_url', image_url: { url: 'file:///etc/passwd' } })).toBe(
      'messages[0].content[0].image_url.url',
    );
    expect(part({ type: 'file', file: { file_id: 'file-1' } })).toBe('messages[0].content[0].file');
    expect(
      refused({
        messages: [{ role: 'system', content: [{ type: 'image_url', image_url: { url: 'https://x/y.png' } }] }],
      }).param,
    ).toBe('messages[0].content[0].type');
  });

  it('maps stop, user, max_completion_tokens; refuses fields Anthropic cannot honour; sends no field it does not know', () => {
    const out = toAnthropicRequest(
      {
        ...base,
        max_completion_tokens: 77,
        stop: ['A', 'B'],
        user: 'u-9',
        seed: 1,
        store: true,
        metadata: { a: 'b' },
        reasoning_effort: 'low',
        service_tier: 'auto',
        prompt_cache_key: 'k',
        prediction: { type: 'content', content: 'x' },
        frobnicate: 1,
      },
      'claude',
    );
    expect(out).toEqual({
      model: 'claude',
      messages: [{ role: 'user', content: 'Paris?' }],
      max_tokens: 77,
      stop_sequences: ['A', 'B'],
      metadata: { user_id: 'u-9' },
    });
    expect(refused({ n: 2 }).param).toBe('n');
    expect(refused({ logprobs: true }).param).toBe('logprobs');
    expect(refused({ top_logprobs: 3 }).param).toBe('top_logprobs');
    expect(refused({ modalities: ['text', 'audio'], audio: { voice: 'alloy', format: 'mp3' } }).param).toBe('audio');
    expect(refused({ modalities: ['text', 'audio'] }).param).toBe('modalities');
    expect(refused({ web_search_options: {} }).param).toBe('web_search_options');
    expect(refused({ stop: ['END', '\n\n'] }).param).toBe('stop');
    expect(refused({ stop: ' ' }).param).toBe('stop');
    expect(
      toAnthropicRequest({ ...base, logprobs: false, top_logprobs: 0, n: 1, modalities: ['text'] } as any, 'u')
        .messages,
    ).toHaveLength(1);
  });

  it('refuses response_format json_object / json_schema (the Messages API has no JSON mode); text stays allowed', () => {
    expect(refused({ response_format: { type: 'json_object' } })).toMatchObject({
      param: 'response_format',
      status: 400,
    });
    expect(
      refused({ response_format: { type: 'json_schema', json_schema: { name: 'a', schema: { type: 'object' } } } })
        .param,
    ).toBe('response_format');
    expect(toAnthropicRequest({ ...base, response_format: { type: 'text' } } as any, 'u')).not.toHaveProperty(
      'response_format',
    );
    expect(toAnthropicRequest({ ...base, response_format: null } as any, 'u').messages).toHaveLength(1);
  });

  it('maps image/jpg data URLs to image/jpeg', () => {
    const out = toAnthropicRequest(
      {
        ...base,
        messages: [
          { role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:image/jpg;base64,/9j/' } }] },
        ],
      } as any,
      'u',
    );
    expect(out.messages[0].content).toEqual([
      { type: 'image', source: { type: 'base64', media_type: 'image/jpeg', data: '/9j/' } },
    ]);
  });

  it('sends no empty text: empty parts are dropped, an empty assistant turn is left out and the roles still alternate', () => {
    const out = toAnthropicRequest(
      {
        model: 'm',
        messages: [
          { role: 'system', content: '' },
          {
            role: 'user',
            content: [
              { type: 'text', text: '' },
              { type: 'text', text: 'a' },
            ],
          },
          { role: 'assistant', content: '' },
          { role: 'user', content: 'b' },
          { role: 'assistant', content: [{ type: 'text', text: '' }] },
          { role: 'user', content: '' },
          { role: 'user', content: 'c' },
          { role: 'assistant', content: 'ok' },
          {
            role: 'user',
            content: [
              { type: 'text', text: 'd' },
              { type: 'text', text: '' },
            ],
          },
        ],
      } as any,
      'u',
    );
    expect(out).not.toHaveProperty('system');
    expect(out.messages).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'a' },
          { type: 'text', text: 'b' },
          { type: 'text', text: 'c' },
        ],
      },
      { role: 'assistant', content: 'ok' },
      { role: 'user', content: [{ type: 'text', text: 'd' }] },
    ]);
    const texts = out.messages.flatMap((m) =>
      typeof m.content === 'string' ? [m.content] : m.content.filter((b) => b.type === 'text').map((b: any) => b.text),
    );
    expect(texts).not.toContain('');
    expect(refused({ messages: [{ role: 'user', content: '' }] }).param).toBe('messages');
  });

  it('maps stop_reason model_context_window_exceeded to finish_reason length, streamed or not', async () => {
    expect(finishReasonOf('model_context_window_exceeded')).toBe('length');
    const msg: AnthropicMessage = {
      id: 'x',
      type: 'message',
      role: 'assistant',
      model: 'c',
      content: [{ type: 'text', text: 'cut' }],
      stop_reason: 'model_context_window_exceeded',
      usage: { input_tokens: 1, output_tokens: 1 },
    };
    expect(fromAnthropicMessage(msg, 'p').choices[0].finish_reason).toBe('length');
    async function* events() {
      yield {
        event: 'message_start',
        data: JSON.stringify({ type: 'message_start', message: { id: 'x', usage: { input_tokens: 1 } } }),
      };
      yield {
        event: 'message_delta',
        data: JSON.stringify({
          type: 'message_delta',
          delta: { stop_reason: 'model_context_window_exceeded' },
          usage: { output_tokens: 1 },
        }),
      };
      yield { event: 'message_stop', data: JSON.stringify({ type: 'message_stop' }) };
    }
    const finishes: Array<string | null> = [];
    for await (const c of anthropicEventsToChunks(events(), 'p'))
      for (const ch of c.choices) finishes.push(ch.finish_reason);
    expect(finishes.filter((x) => x !== null)).toEqual(['length']);
  });

  it('maps legacy functions / function_call both ways', () => {
    const out = toAnthropicRequest(
      {
        model: 'm',
        functions: [{ name: 'get_weather', parameters: { type: 'object', properties: {} } }],
        function_call: { name: 'get_weather' },
        messages: [
          { role: 'user', content: 'x' },
          { role: 'assistant', content: null, function_call: { name: 'get_weather', arguments: '{"city":"Oslo"}' } },
          { role: 'function', name: 'get_weather', content: '3C' },
        ],
      },
      'u',
    );
    expect(out.tools).toEqual([{ name: 'get_weather', input_schema: { type: 'object', properties: {} } }]);
    expect(out.tool_choice).toEqual({ type: 'tool', name: 'get_weather', disable_parallel_tool_use: true });
    expect(out.messages.slice(1)).toEqual([
      {
        role: 'assistant',
        content: [{ type: 'tool_use', id: 'call_fn1', name: 'get_weather', input: { city: 'Oslo' } }],
      },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_fn1', content: '3C' }] },
    ]);
    const msg = fromAnthropicMessage(
      {
        id: 'x',
        type: 'message',
        role: 'assistant',
        model: 'c',
        content: [{ type: 'tool_use', id: 't', name: 'get_weather', input: { city: 'Oslo' } }],
        stop_reason: 'tool_use',
        usage: { input_tokens: 1, output_tokens: 1 },
      },
      'p',
      1,
      'functions',
    );
    expect(msg.choices[0]).toEqual({
      index: 0,
      message: {
        role: 'assistant',
        content: null,
        function_call: { name: 'get_weather', arguments: '{"city":"Oslo"}' },
      },
      finish_reason: 'function_call',
    });
  });

  it('maps tool_use blocks to tool_calls, content null when there is no text', () => {
    const msg = (content: AnthropicMessage['content']) =>
      fromAnthropicMessage(
        {
          id: 'msg_t',
          type: 'message',
          role: 'assistant',
          model: 'c',
          content,
          stop_reason: 'tool_use',
          usage: { input_tokens: 5, output_tokens: 4 },
        },
        'vendor-claude-3',
        1,
      );
    const only = msg([
      { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Paris' } },
      { type: 'tool_use', id: 'toolu_2', name: 'get_time', input: {} },
    ]);
    expect(only.choices[0]).toEqual({
      index: 0,
      message: {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'toolu_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
          { id: 'toolu_2', type: 'function', function: { name: 'get_time', arguments: '{}' } },
        ],
      },
      finish_reason: 'tool_calls',
    });
    const mixed = msg([
      { type: 'text', text: 'Checking.' },
      { type: 'tool_use', id: 'toolu_3', name: 'get_time', input: {} },
    ]);
    expect(mixed.choices[0].message).toMatchObject({ content: 'Checking.', tool_calls: [{ id: 'toolu_3' }] });
    expect(finishReasonOf('end_turn')).toBe('stop');
    expect(finishReasonOf('stop_sequence')).toBe('stop');
    expect(finishReasonOf('max_tokens')).toBe('length');
  });

  it('streams tool_use as tool_calls deltas, one chunk per fragment, indexes counting tool blocks only', async () => {
    const e = (data: Record<string, unknown>) => ({ event: String(data.type), data: JSON.stringify(data) });
    async function* events() {
      yield e({ type: 'message_start', message: { id: 'msg_s', usage: { input_tokens: 9, output_tokens: 1 } } });
      yield e({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } });
      yield e({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Checking.' } });
      yield e({ type: 'content_block_stop', index: 0 });
      yield e({
        type: 'content_block_start',
        index: 1,
        content_block: { type: 'tool_use', id: 'toolu_a', name: 'get_weather', input: {} },
      });
      yield e({ type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '' } });
      yield e({ type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '{"city":' } });
      yield e({
        type: 'content_block_delta',
        index: 1,
        delta: { type: 'input_json_delta', partial_json: ' "Paris"}' },
      });
      yield e({ type: 'content_block_stop', index: 1 });
      yield e({
        type: 'content_block_start',
        index: 2,
        content_block: { type: 'tool_use', id: 'toolu_b', name: 'get_time', input: {} },
      });
      yield e({ type: 'content_block_delta', index: 2, delta: { type: 'input_json_delta', partial_json: '{}' } });
      yield e({ type: 'content_block_stop', index: 2 });
      yield e({ type: 'message_delta', delta: { stop_reason: 'tool_use' }, usage: { output_tokens: 12 } });
      yield e({ type: 'message_stop' });
    }
    const chunks: ChatCompletionChunk[] = [];
    for await (const c of anthropicEventsToChunks(events(), 'vendor-claude-3')) chunks.push(c);
    expect(chunks.map((c) => c.choices[0]?.delta)).toEqual([
      { role: 'assistant', content: '' },
      { content: 'Checking.' },
      { tool_calls: [{ index: 0, id: 'toolu_a', type: 'function', function: { name: 'get_weather', arguments: '' } }] },
      { tool_calls: [{ index: 0, function: { arguments: '{"city":' } }] },
      { tool_calls: [{ index: 0, function: { arguments: ' "Paris"}' } }] },
      { tool_calls: [{ index: 1, id: 'toolu_b', type: 'function', function: { name: 'get_time', arguments: '' } }] },
      { tool_calls: [{ index: 1, function: { arguments: '{}' } }] },
      {},
      undefined,
    ]);
    expect(chunks[7].choices[0].finish_reason).toBe('tool_calls');
    expect(chunks[8].usage).toEqual({ prompt_tokens: 9, completion_tokens: 12, total_tokens: 21 });
  });
});

describe('AnthropicClient tool loop against the Messages API fake', () => {
  let up: FakeUpstream;
  let client: AnthropicClient;
  beforeAll(async () => {
    up = await startFakeAnthropic();
    client = new AnthropicClient({ baseUrl: up.url, headers: {}, timeoutMs: 2000, connections: 2 });
  });
  afterAll(async () => {
    await client.close();
    await up.close();
  });
  beforeEach(() => up.reset());
  const tools = [
    {
      type: 'function',
      function: {
        name: 'lookup',
        parameters: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] },
      },
    },
  ];

  it('runs both steps of a tool loop, streamed', async () => {
    const ask = {
      model: 'c',
      tools,
      tool_choice: 'required',
      messages: [{ role: 'user' as const, content: 'capital of France' }],
    };
    const stream = await client.chatStream(ask);
    const calls: any[] = [];
    let finish: string | null = null;
    for await (const c of stream) {
      for (const tc of (c.choices[0]?.delta.tool_calls as any[]) ?? []) {
        calls[tc.index] ??= { id: tc.id, name: tc.function.name, arguments: '' };
        calls[tc.index].arguments += tc.function.arguments ?? '';
      }
      finish = c.choices[0]?.finish_reason ?? finish;
    }
    expect(finish).toBe('tool_calls');
    expect(calls).toEqual([
      { id: expect.stringMatching(/^toolu_/), name: 'lookup', arguments: '{"q":"capital of France"}' },
    ]);
    const res = await client.chat({
      ...ask,
      messages: [
        ...ask.messages,
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            { id: calls[0].id, type: 'function', function: { name: 'lookup', arguments: calls[0].arguments } },
          ],
        },
        { role: 'tool', tool_call_id: calls[0].id, content: 'Paris' },
      ],
    });
    expect(res.choices[0]).toMatchObject({ message: { content: 'Result: Paris' }, finish_reason: 'stop' });
  });

  it('the fake refuses what Anthropic refuses: a tool_result without its tool_use', async () => {
    const bad = await client
      .chat({
        model: 'c',
        tools,
        messages: [
          { role: 'user', content: 'x' },
          { role: 'assistant', content: 'y' },
          { role: 'tool', tool_call_id: 'nope', content: 'r' },
        ],
      })
      .catch((e) => e);
    expect(bad).toMatchObject({ status: 400 });
    expect(bad.message).toContain('tool_use_id');
  });
});
