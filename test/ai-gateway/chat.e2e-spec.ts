import OpenAI from 'openai';
import { GatewayFixture, resetUpstreams, startGatewayFixture } from './gateway-fixture';

describe('AI gateway chat completions (openai SDK)', () => {
  let f: GatewayFixture;
  let key: string;
  let client: OpenAI;

  beforeAll(async () => {
    f = await startGatewayFixture();
    key = (await f.createKey({ name: 'chat-test' })).key;
    client = new OpenAI({ apiKey: key, baseURL: `${f.gw.url}/v1`, maxRetries: 0, timeout: 10_000 });
  });
  afterAll(() => f?.close());
  beforeEach(() => resetUpstreams(f));

  it('completes a chat through the OpenAI deployment with the upstream model name', async () => {
    const res = await client.chat.completions
      .create({
        model: 'vendor-gpt-4',
        messages: [
          { role: 'system', content: 'Be brief.' },
          { role: 'user', content: 'hello gateway' },
        ],
        temperature: 0.5,
      })
      .withResponse();
    expect(res.data.choices[0].message.content).toBe('Echo: hello gateway');
    expect(res.data.model).toBe('vendor-gpt-4');
    expect(res.data.usage).toEqual({ prompt_tokens: 6, completion_tokens: 3, total_tokens: 9 });
    expect(f.openai.requests[0].body).toMatchObject({ model: 'gpt-4o', temperature: 0.5 });
    expect(f.openai.requests[0].headers.authorization).toBe('Bearer sk-upstream-openai');
    expect(Number(res.response.headers.get('x-gateway-overhead-ms'))).toBeGreaterThanOrEqual(0);
  });

  it('streams chunks as they arrive, with usage on request, then [DONE]', async () => {
    // The upstream writes one chunk and holds the rest until the client has it: a gateway that
    // buffered would never deliver it (the test then ends at Jest's timeout), one that forwards does.
    let release!: () => void;
    f.openai.behaviour.holdAfterChunks = 1;
    f.openai.behaviour.hold = new Promise<void>((r) => (release = r));
    const stream = await client.chat.completions.create({
      model: 'vendor-gpt-4',
      stream: true,
      stream_options: { include_usage: true },
      messages: [{ role: 'user', content: 'one two three' }],
    });
    const parts: string[] = [];
    let usage;
    for await (const chunk of stream) {
      if (chunk.choices[0]?.delta?.content) {
        parts.push(chunk.choices[0].delta.content);
        release();
      }
      if (chunk.usage) usage = chunk.usage;
    }
    expect(parts.join('')).toBe('Echo: one two three');
    expect(parts.length).toBeGreaterThan(1);
    expect(usage).toEqual({ prompt_tokens: 4, completion_tokens: 4, total_tokens: 8 });
    expect(f.openai.requests[0].body.stream_options).toEqual({ include_usage: true });
  });

  it('asks the upstream for usage even when the client did not, and hides the usage chunk', async () => {
    const res = await fetch(`${f.gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'vendor-gpt-4-mini', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(res.headers.get('x-accel-buffering')).toBe('no');
    expect(res.headers.get('x-gateway-overhead-ms')).toMatch(/^\d+(\.\d+)?$/);
    const text = await res.text();
    const events = text.split('\n\n').filter(Boolean);
    expect(events[events.length - 1]).toBe('data: [DONE]');
    expect(text).not.toContain('"usage"');
    expect(f.openai.requests[0].body.stream_options).toEqual({ include_usage: true });
  });

  it('translates to and from the Anthropic Messages API, streamed and not', async () => {
    const res = await client.chat.completions.create({
      model: 'vendor-claude-3',
      max_tokens: 100,
      messages: [
        { role: 'system', content: 'sys' },
        { role: 'user', content: 'bonjour' },
      ],
    });
    expect(res.choices[0]).toMatchObject({
      message: { role: 'assistant', content: 'Echo: bonjour' },
      finish_reason: 'stop',
    });
    expect(f.anthropic.requests[0].body).toMatchObject({
      model: 'claude-3-5-sonnet-latest',
      system: 'sys',
      max_tokens: 100,
      messages: [{ role: 'user', content: 'bonjour' }],
    });
    expect(f.anthropic.requests[0].headers['x-api-key']).toBe('sk-upstream-anthropic');

    const stream = await client.chat.completions.create({
      model: 'vendor-claude-3',
      stream: true,
      stream_options: { include_usage: true },
      messages: [{ role: 'user', content: 'a b' }],
    });
    const parts: string[] = [];
    let finish;
    let usage;
    for await (const c of stream) {
      if (c.choices[0]?.delta?.content) parts.push(c.choices[0].delta.content);
      if (c.choices[0]?.finish_reason) finish = c.choices[0].finish_reason;
      if (c.usage) usage = c.usage;
    }
    expect(parts.join('')).toBe('Echo: a b');
    expect(finish).toBe('stop');
    expect(usage).toEqual({ prompt_tokens: 3, completion_tokens: 3, total_tokens: 6 });
  });

  it('reports max_tokens truncation as finish_reason length', async () => {
    const res = await client.chat.completions.create({
      model: 'vendor-claude-3',
      max_tokens: 1,
      messages: [{ role: 'user', content: 'long answer please' }],
    });
    expect(res.choices[0].finish_reason).toBe('length');
  });

  it('validates like the contract, naming the parameter', async () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ temperature: 2.5 }, 'temperature'],
      [{ top_p: 1.5 }, 'top_p'],
      [{ frequency_penalty: -3 }, 'frequency_penalty'],
      [{ presence_penalty: 2.1 }, 'presence_penalty'],
      [{ messages: [] }, 'messages'],
      [{ messages: [{ role: 'robot', content: 'x' }] }, 'messages.0.role'],
      [{ messages: [{ role: 'user', content: 5 }] }, 'messages.0.content'],
      [{ max_tokens: 0 }, 'max_tokens'],
      [{ n: 0 }, 'n'],
      // Unknown fields pass to the deployment's policy (docs/ai-gateway/chat.md), except those that could lengthen the answer.
      [{ max_new_tokens: 1 }, 'max_new_tokens'],
    ];
    for (const [patch, param] of cases) {
      const err: any = await client.chat.completions
        .create({ model: 'vendor-gpt-4', messages: [{ role: 'user', content: 'x' }], ...(patch as any) })
        .catch((e) => e);
      expect(err).toBeInstanceOf(OpenAI.BadRequestError);
      expect(err.error).toMatchObject({ type: 'invalid_request_error', param });
    }
    expect(f.openai.requests).toHaveLength(0);
  });

  it('refuses a prompt beyond the context length, counted with the real tokenizer', async () => {
    const err: any = await client.chat.completions
      .create({ model: 'vendor-llama-70b', messages: [{ role: 'user', content: 'word '.repeat(33_000) }] })
      .catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect(err.error).toMatchObject({ code: 'context_length_exceeded', param: 'messages' });
    expect(err.message).toContain('maximum context length is 32000 tokens');
  });

  it('answers 404 for an unknown model, 503 for a known model nobody serves, 400 for an embeddings model', async () => {
    const unknown: any = await client.chat.completions
      .create({ model: 'gpt-7', messages: [{ role: 'user', content: 'x' }] })
      .catch((e) => e);
    expect(unknown).toBeInstanceOf(OpenAI.NotFoundError);
    expect(unknown.error).toMatchObject({ code: 'model_not_found', param: 'model' });
    const wrongKind: any = await client.chat.completions
      .create({ model: 'text-embedding-v3', messages: [{ role: 'user', content: 'x' }] })
      .catch((e) => e);
    expect(wrongKind.status).toBe(400);
    const noProvider = await fetch(`${f.gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'vendor-llama-70b', messages: [{ role: 'user', content: 'x' }] }),
    });
    // vendor-llama-70b's only deployment has weight 0: configured but not routable.
    expect(noProvider.status).toBe(503);
    expect((await noProvider.json()).error).toMatchObject({ code: 'no_provider' });
  });

  it('rejects missing and wrong keys with 401 invalid_api_key', async () => {
    const bad = new OpenAI({ apiKey: 'sk-wrongwrongwrongwrongwrongwrong', baseURL: `${f.gw.url}/v1`, maxRetries: 0 });
    const err: any = await bad.chat.completions
      .create({ model: 'vendor-gpt-4', messages: [{ role: 'user', content: 'x' }] })
      .catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.AuthenticationError);
    expect(err.error).toMatchObject({ code: 'invalid_api_key', type: 'invalid_request_error' });
    expect(err.message).not.toContain('sk-wrongwrongwrongwrongwrongwrong');
    const none = await fetch(`${f.gw.url}/v1/models`);
    expect(none.status).toBe(401);
    expect(none.headers.get('x-gateway-overhead-ms')).toMatch(/^\d+(\.\d+)?$/);
    expect((await none.json()).error.code).toBe('invalid_api_key');
  });
});
