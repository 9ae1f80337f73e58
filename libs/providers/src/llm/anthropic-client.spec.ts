import { startFakeAnthropic, FakeUpstream } from '../../../../test/support/upstreams';
import { AnthropicClient, anthropicEventsToChunks, fromAnthropicMessage, toAnthropicRequest, UnsupportedRequestError } from './anthropic-client';
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
        { role: 'user', content: [{ type: 'text', text: 'Hi' }, { type: 'text', text: 'there' }] },
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
    const messages = Array.from({ length: 4096 }, (_, i) => ({ role: 'user' as const, content: i % 2 ? `m${i}` : [{ type: 'text', text: `m${i}` }] }));
    const out = toAnthropicRequest({ model: 'm', messages: [...messages, { role: 'assistant', content: 'ok' }] }, 'u');
    expect(out.messages).toHaveLength(2);
    expect(out.messages[0].content).toEqual(messages.map((_, i) => ({ type: 'text', text: `m${i}` })));
  });

  it('defaults max_tokens, turns data-URL images into base64 sources, refuses n > 1', () => {
    const out = toAnthropicRequest({ model: 'm', messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } }] }] }, 'u');
    expect(out.max_tokens).toBe(4096);
    expect(out.messages[0].content).toEqual([{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAAA' } }]);
    expect(() => toAnthropicRequest({ model: 'm', messages: [{ role: 'user', content: 'x' }], n: 2 }, 'u')).toThrow(UnsupportedRequestError);
  });

  it('maps a message back with stop reason and usage', () => {
    const res = fromAnthropicMessage(
      { id: 'msg_1', type: 'message', role: 'assistant', model: 'c', content: [{ type: 'text', text: 'Hel' }, { type: 'text', text: 'lo' }], stop_reason: 'max_tokens', usage: { input_tokens: 10, output_tokens: 3, cache_read_input_tokens: 2 } },
      'vendor-claude-3',
      123,
    );
    expect(res).toEqual({
      id: 'chatcmpl-msg_1',
      object: 'chat.completion',
      created: 123,
      model: 'vendor-claude-3',
      choices: [{ index: 0, message: { role: 'assistant', content: 'Hello' }, finish_reason: 'length' }],
      usage: { prompt_tokens: 12, completion_tokens: 3, total_tokens: 15 },
    });
  });

  it('turns stream events into OpenAI chunks ending with a usage chunk', async () => {
    async function* events() {
      yield { event: 'message_start', data: JSON.stringify({ type: 'message_start', message: { id: 'msg_9', usage: { input_tokens: 7, output_tokens: 1 } } }) };
      yield { event: 'ping', data: '{"type":"ping"}' };
      yield { event: 'content_block_delta', data: JSON.stringify({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hi' } }) };
      yield { event: 'content_block_delta', data: JSON.stringify({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: '!' } }) };
      yield { event: 'message_delta', data: JSON.stringify({ type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 2 } }) };
      yield { event: 'message_stop', data: '{"type":"message_stop"}' };
    }
    const chunks: ChatCompletionChunk[] = [];
    for await (const c of anthropicEventsToChunks(events(), 'vendor-claude-3')) chunks.push(c);
    expect(chunks.map((c) => c.choices[0]?.delta)).toEqual([{ role: 'assistant', content: '' }, { content: 'Hi' }, { content: '!' }, {}, undefined]);
    expect(chunks[3].choices[0].finish_reason).toBe('stop');
    expect(chunks[4]).toMatchObject({ id: 'chatcmpl-msg_9', choices: [], usage: { prompt_tokens: 7, completion_tokens: 2, total_tokens: 9 } });
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
      yield { event: 'error', data: JSON.stringify({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }) };
    }
    await expect(drain(anthropicEventsToChunks(err(), 'x'))).rejects.toThrow('Overloaded');
  });
});

describe('AnthropicClient against a Messages API server', () => {
  let up: FakeUpstream;
  let client: AnthropicClient;
  beforeAll(async () => {
    up = await startFakeAnthropic();
    client = new AnthropicClient({ baseUrl: up.url, apiKey: 'sk-ant-test', headers: {}, timeoutMs: 2000, connections: 4 });
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
    const res = await client.chat({ model: 'claude-x', messages: [{ role: 'system', content: 'sys' }, { role: 'user', content: 'hello world' }] });
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
