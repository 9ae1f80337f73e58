import { createServer } from 'http';
import type { AddressInfo } from 'net';
import { fakeEmbedding, FakeUpstream, startFakeOpenAi } from '../../../test/support/upstreams';
import { Base64Vector, vectorNumbers } from './embedding-vector';
import { OpenAiCompatibleClient } from './openai-client';
import { CallAbortedError, UpstreamError } from './types';

describe('OpenAiCompatibleClient', () => {
  let up: FakeUpstream;
  let client: OpenAiCompatibleClient;
  beforeAll(async () => {
    up = await startFakeOpenAi();
    client = new OpenAiCompatibleClient({
      baseUrl: up.url,
      apiKey: 'sk-up',
      headers: { 'x-extra': '1' },
      timeoutMs: 500,
      connections: 2,
    });
  });
  afterAll(async () => {
    await client.close();
    await up.close();
  });
  beforeEach(() => {
    up.reset();
    up.behaviour.apiKey = 'sk-up';
  });

  it('completes a chat over a kept-alive connection with the configured headers', async () => {
    const a = await client.chat({ model: 'm', messages: [{ role: 'user', content: 'hi there' }] });
    const b = await client.chat({ model: 'm', messages: [{ role: 'user', content: 'again' }] });
    expect(a.choices[0].message.content).toBe('Echo: hi there');
    expect(b.usage).toEqual({ prompt_tokens: 2, completion_tokens: 2, total_tokens: 4 });
    expect(up.requests[0].headers['x-extra']).toBe('1');
    for (let i = 0; i < 4; i++) await client.chat({ model: 'm', messages: [{ role: 'user', content: 'more' }] });
    // Six sequential calls share the pool's (at most two) kept-alive connections.
    expect(new Set(up.requests.map((r) => r.remotePort)).size).toBeLessThanOrEqual(2);
  });

  it('streams chunks and asks the upstream for usage', async () => {
    const stream = await client.chatStream({ model: 'm', messages: [{ role: 'user', content: 'a b' }] });
    const parts: string[] = [];
    let usage;
    for await (const c of stream) {
      if (c.choices[0]?.delta.content) parts.push(c.choices[0].delta.content);
      if (c.usage) usage = c.usage;
    }
    expect(parts).toEqual(['Echo: ', 'a ', 'b']);
    expect(usage).toEqual({ prompt_tokens: 3, completion_tokens: 3, total_tokens: 6 });
    expect(up.requests[0].body).toMatchObject({ stream: true, stream_options: { include_usage: true } });
  });

  it('leaves stream_options out for a server configured without stream usage', async () => {
    const plain = new OpenAiCompatibleClient({
      baseUrl: up.url,
      apiKey: 'sk-up',
      headers: {},
      timeoutMs: 500,
      connections: 1,
      streamUsage: false,
    });
    try {
      const stream = await plain.chatStream({ model: 'm', messages: [{ role: 'user', content: 'x' }] });
      const chunks = [];
      for await (const c of stream) chunks.push(c);
      expect(chunks.some((c) => c.usage)).toBe(false);
      expect(up.requests[0].body.stream_options).toBeUndefined();
    } finally {
      await plain.close();
    }
  });

  it('sends the completion limit under the one name the deployment honours, never both (OpenAI refuses both)', async () => {
    up.behaviour.honoursLimit = 'max_completion_tokens';
    const modern = new OpenAiCompatibleClient({
      baseUrl: up.url,
      apiKey: 'sk-up',
      headers: {},
      timeoutMs: 500,
      connections: 1,
      completionLimitParam: 'max_completion_tokens',
    });
    try {
      const res = await modern.chat({
        model: 'm',
        messages: [{ role: 'user', content: 'one two three four' }],
        max_completion_tokens: 2,
        max_tokens: 100,
      });
      expect(res.choices[0].finish_reason).toBe('length');
      expect(res.usage?.completion_tokens).toBe(2);
      const stream = await modern.chatStream({
        model: 'm',
        messages: [{ role: 'user', content: 'one two three four' }],
        max_tokens: 3,
      });
      for await (const _ of stream) void _;
      expect(up.requests.map((r) => [r.body.max_tokens, r.body.max_completion_tokens])).toEqual([
        [undefined, 2],
        [undefined, 3],
      ]);
    } finally {
      await modern.close();
    }
    up.reset();
    up.behaviour.apiKey = 'sk-up';
    up.behaviour.honoursLimit = 'max_tokens';
    // A local (non-OpenAI) base URL defaults to max_tokens.
    const res = await client.chat({
      model: 'm',
      messages: [{ role: 'user', content: 'one two three four' }],
      max_completion_tokens: 2,
    });
    expect(res.usage?.completion_tokens).toBe(2);
    expect([up.requests[0].body.max_tokens, up.requests[0].body.max_completion_tokens]).toEqual([2, undefined]);
  });

  it('forwards unknown fields by default; a deployment with unknownFields: drop sends only the known ones (chat and stream)', async () => {
    const body = {
      model: 'm',
      messages: [{ role: 'user' as const, content: 'hi' }],
      tools: [{ type: 'function', function: { name: 'f' } }],
      future_field: { a: 1 },
    };
    await client.chat(body);
    expect(up.requests[0].body).toMatchObject({ tools: body.tools, future_field: { a: 1 } });
    const strict = new OpenAiCompatibleClient({
      baseUrl: up.url,
      apiKey: 'sk-up',
      headers: {},
      timeoutMs: 500,
      connections: 1,
      unknownFields: 'drop',
    });
    try {
      await strict.chat(body);
      const stream = await strict.chatStream(body);
      for await (const _ of stream) void _;
      for (const r of up.requests.slice(1)) {
        expect(r.body).not.toHaveProperty('future_field');
        expect(r.body).toMatchObject({ model: 'm', messages: body.messages, tools: body.tools });
      }
    } finally {
      await strict.close();
    }
  });

  it('passes tool_calls answers and streamed tool_calls deltas through unchanged, one chunk per upstream event', async () => {
    const tools = [
      {
        type: 'function',
        function: { name: 'lookup', parameters: { type: 'object', properties: { q: { type: 'string' } } } },
      },
    ];
    const res = await client.chat({ model: 'm', tools, messages: [{ role: 'user', content: 'cats' }] });
    expect(res.choices[0]).toMatchObject({
      finish_reason: 'tool_calls',
      message: {
        content: null,
        tool_calls: [{ type: 'function', function: { name: 'lookup', arguments: '{"q":"cats"}' } }],
      },
    });
    const stream = await client.chatStream({ model: 'm', tools, messages: [{ role: 'user', content: 'cats' }] });
    const deltas = [];
    for await (const c of stream) for (const d of (c.choices[0]?.delta?.tool_calls as unknown[]) ?? []) deltas.push(d);
    expect(deltas).toEqual([
      { index: 0, id: expect.any(String), type: 'function', function: { name: 'lookup', arguments: '' } },
      { index: 0, function: { arguments: '{"q":"ca' } },
      { index: 0, function: { arguments: 'ts"}' } },
    ]);
  });

  it('returns embeddings', async () => {
    const res = await client.embeddings({ model: 'e', input: ['x', 'y'], dimensions: 8 });
    expect(res.data.map((d) => d.embedding.length)).toEqual([8, 8]);
  });

  it("asks embeddings in the deployment's encoding, whatever the caller asked, and reads base64 back to numbers", async () => {
    const res = await client.embeddings({ model: 'e', input: ['x'], dimensions: 8, encoding_format: 'base64' });
    expect(up.requests.at(-1)!.body.encoding_format).toBe('float');
    expect(res.data[0].embedding).toEqual(fakeEmbedding('x', 8));
    const b64 = new OpenAiCompatibleClient({
      baseUrl: up.url,
      apiKey: 'sk-up',
      headers: {},
      timeoutMs: 500,
      connections: 1,
      embeddingsEncoding: 'base64',
    });
    try {
      const got = await b64.embeddings({ model: 'e', input: ['x', 'y'], dimensions: 8, encoding_format: 'float' });
      expect(up.requests.at(-1)!.body.encoding_format).toBe('base64');
      // The same float32 values the upstream encoded, decoded to a Float32Array.
      expect(got.data.every((d) => d.embedding instanceof Float32Array)).toBe(true);
      expect(got.data.map((d) => vectorNumbers(d.embedding))).toEqual([
        Array.from(new Float32Array(fakeEmbedding('x', 8))),
        Array.from(new Float32Array(fakeEmbedding('y', 8))),
      ]);
    } finally {
      await b64.close();
    }
  });

  it.each([
    ['AAAAAAA=', 'not whole float32 values'],
    ['', 'not base64'],
    ['AAAA AAA', 'not base64'],
    ['AA-_AAAA', 'not base64'],
  ])('fails as a protocol error on the embedding %j (%s)', async (embedding, message) => {
    const bad = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ object: 'list', data: [{ index: 0, object: 'embedding', embedding }] }));
      });
    });
    await new Promise<void>((r) => bad.listen(0, '127.0.0.1', r));
    const c = new OpenAiCompatibleClient({
      baseUrl: `http://127.0.0.1:${(bad.address() as AddressInfo).port}`,
      headers: {},
      timeoutMs: 500,
      connections: 1,
      embeddingsEncoding: 'base64',
    });
    try {
      const e = await c.embeddings({ model: 'e', input: ['x'] }).catch((err: unknown) => err);
      expect(e).toBeInstanceOf(UpstreamError);
      expect(e).toMatchObject({ kind: 'protocol', message: expect.stringContaining(message) });
    } finally {
      await c.close();
      await new Promise((r) => bad.close(r));
    }
  });

  it("parses a large embeddings answer a vector at a time on the call's pace, to the same numbers; a broken one is a protocol error", async () => {
    const vectors = Array.from({ length: 600 }, (_, i) =>
      Array.from({ length: 64 }, (_, k) => Math.fround((i - k) / 7)),
    );
    let answer = '';
    const big = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.setHeader('content-type', 'application/json');
        res.end(answer);
      });
    });
    await new Promise<void>((r) => big.listen(0, '127.0.0.1', r));
    const c = new OpenAiCompatibleClient({
      baseUrl: `http://127.0.0.1:${(big.address() as AddressInfo).port}`,
      headers: {},
      timeoutMs: 2000,
      connections: 1,
      embeddingsEncoding: 'base64',
    });
    try {
      for (const base64 of [true, false]) {
        answer = JSON.stringify({
          object: 'list',
          model: 'e',
          data: vectors.map((v, index) => ({
            index,
            object: 'embedding',
            embedding: base64 ? Buffer.from(new Float32Array(v).buffer).toString('base64') : v,
          })),
          usage: { prompt_tokens: 600, total_tokens: 600 },
        });
        expect(answer.length).toBeGreaterThan(64 * 1024);
        let turns = 0;
        let charged = 0;
        const pace = {
          charge: (units: number) => {
            charged += units;
            if (charged < 4096) return undefined;
            charged = 0;
            turns++;
            return Promise.resolve();
          },
        };
        const got = await c.embeddings({ model: 'e', input: ['x'] }, { pace });
        expect(got.data.map((d) => vectorNumbers(d.embedding))).toEqual(vectors);
        if (base64) {
          // Each base64 vector kept as the answer's bytes, its text as the upstream sent it.
          expect(got.data.every((d) => d.embedding instanceof Base64Vector)).toBe(true);
          expect(got.data.map((d) => String(d.embedding))).toEqual(
            vectors.map((v) => Buffer.from(new Float32Array(v).buffer).toString('base64')),
          );
        }
        expect(got.usage).toEqual({ prompt_tokens: 600, total_tokens: 600 });
        expect(turns).toBeGreaterThan(2);
      }
      // A server that escapes '/' in strings (JSON allows "\/"): those vectors are read as strings, to the same numbers.
      const floatAnswer = answer;
      const base64Answer = (v: number[]) => Buffer.from(new Float32Array(v).buffer).toString('base64');
      answer = JSON.stringify({
        object: 'list',
        data: vectors.map((v, index) => ({ index, object: 'embedding', embedding: base64Answer(v) })),
      }).replace(/\//g, '\\/');
      expect(answer).toContain('\\/');
      const escaped = await c.embeddings({ model: 'e', input: ['x'] }, { pace: { charge: () => undefined } });
      expect(escaped.data.map((d) => vectorNumbers(d.embedding))).toEqual(vectors);
      expect(escaped.data.some((d) => d.embedding instanceof Float32Array)).toBe(true);
      answer = floatAnswer;
      // Cut short, or a vector that is not base64: refused as the whole JSON.parse would refuse it.
      const whole = answer;
      for (const broken of [
        whole.slice(0, -10),
        whole.replace('"embedding":[', '"embedding":[,'),
        `${whole}x`,
        JSON.stringify({
          data: vectors.map((_, index) => ({ index, embedding: index === 500 ? 'AA-_AAAA' : 'AAAAAAAA' })),
          pad: 'x'.repeat(70_000),
        }),
        JSON.stringify({
          data: vectors.map((_, index) => ({ index, embedding: index === 500 ? 'AAAAAAA=' : 'AAAAAAAA' })),
          pad: 'x'.repeat(70_000),
        }),
      ]) {
        answer = broken;
        let charged = 0;
        const e = await c
          .embeddings({ model: 'e', input: ['x'] }, { pace: { charge: (n: number) => void (charged += n) } })
          .catch((err: unknown) => err);
        expect(e).toBeInstanceOf(UpstreamError);
        expect(e).toMatchObject({ kind: 'protocol' });
        expect(charged).toBeGreaterThan(0); // refused by the sliced parse, not by one JSON.parse
      }
      // Once the upstream has answered, the call is settled with its result: a caller leaving, or the
      // timeout passing, while the answer is parsed (turns that take long) does not fail it. Its pieces are
      // charged as they arrive (a unit per 16 bytes): the slow turn comes with the first charge after them.
      answer = whole;
      const leaving = new AbortController();
      let slow = 0;
      let units = 0;
      const got = await c.embeddings(
        { model: 'e', input: ['x'] },
        {
          signal: leaving.signal,
          timeoutMs: 300,
          pace: {
            charge: (n: number) => {
              units += n;
              if (units <= Buffer.byteLength(whole) / 16 || slow++ > 0) return undefined;
              leaving.abort();
              return new Promise<void>((resolve) => setTimeout(resolve, 600));
            },
          },
        },
      );
      expect(got.data).toHaveLength(600);
      expect(slow).toBeGreaterThan(0);
      // While it is read, a caller leaving after the answer's head does not fail it either.
      const leavingEarly = new AbortController();
      let reads = 0;
      const early = await c.embeddings(
        { model: 'e', input: ['x'] },
        {
          signal: leavingEarly.signal,
          pace: {
            charge: () => {
              if (reads++ > 0) return undefined;
              leavingEarly.abort();
              return new Promise<void>((resolve) => setImmediate(resolve));
            },
          },
        },
      );
      expect(early.data).toHaveLength(600);
    } finally {
      await c.close();
      await new Promise((r) => big.close(r));
    }
  });

  it('carries the upstream error message, status and Retry-After', async () => {
    up.behaviour.rateLimitTimes = 1;
    up.behaviour.retryAfterSeconds = 3;
    const err = await client.chat({ model: 'm', messages: [{ role: 'user', content: 'x' }] }).catch((e) => e);
    expect(err).toBeInstanceOf(UpstreamError);
    expect(err).toMatchObject({
      status: 429,
      retryAfterMs: 3000,
      retryable: true,
      upstreamError: { code: 'rate_limit_exceeded' },
    });
    up.behaviour.apiKey = 'other';
    const auth = await client.chat({ model: 'm', messages: [{ role: 'user', content: 'x' }] }).catch((e) => e);
    expect(auth).toMatchObject({ status: 401, retryable: false });
  });

  it('times out a slow upstream', async () => {
    up.behaviour.delayMs = 1500; // answers after the 500 ms timeout: a timeout error (not the answer) shows the timer won
    const err = await client.chat({ model: 'm', messages: [{ role: 'user', content: 'x' }] }).catch((e) => e);
    expect(err).toMatchObject({ kind: 'timeout', retryable: true });
  });

  it('fails a stream whose upstream goes silent longer than the timeout between chunks', async () => {
    up.behaviour.chunkDelayMs = 1500; // three times the 500 ms timeout: a loaded machine stays well clear of the line
    const stream = await client.chatStream({ model: 'm', messages: [{ role: 'user', content: 'a b c' }] });
    const err = await (async () => {
      for await (const _ of stream) void _;
    })().catch((e) => e);
    expect(err).toMatchObject({ kind: 'timeout' });
    // The connection was given up: the upstream notices on its next write (waited for, however long that takes).
    while (up.stats.streamsAbortedByClient === 0) await new Promise((r) => setTimeout(r, 50));
    expect(up.stats.streamsAbortedByClient).toBe(1);
  });

  it('fails a stream dropped mid-way after delivering what arrived', async () => {
    up.behaviour.dropAfterChunks = 2;
    const stream = await client.chatStream({ model: 'm', messages: [{ role: 'user', content: 'one two three four' }] });
    const parts: string[] = [];
    const err = await (async () => {
      for await (const c of stream) if (c.choices[0]?.delta.content) parts.push(c.choices[0].delta.content);
    })().catch((e) => e);
    expect(parts).toEqual(['Echo: ', 'one ']);
    expect(err).toBeInstanceOf(UpstreamError);
  });

  it('aborts the upstream stream when the caller aborts', async () => {
    up.behaviour.chunkDelayMs = 50;
    const ac = new AbortController();
    const stream = await client.chatStream(
      { model: 'm', messages: [{ role: 'user', content: 'a b c d e f g h i j' }] },
      { signal: ac.signal },
    );
    const err = await (async () => {
      for await (const c of stream) if (c.choices[0]?.delta.content) ac.abort();
    })().catch((e) => e);
    expect(err).toBeInstanceOf(CallAbortedError);
    await new Promise((r) => setTimeout(r, 150));
    expect(up.stats).toMatchObject({ streamsStarted: 1, streamsCompleted: 0, streamsAbortedByClient: 1 });
  });

  describe('whole-call deadline on a body that trickles', () => {
    // Headers at once, then one body byte every 150 ms: each gap is within the 500 ms timeout, the whole is not.
    let server: import('http').Server;
    let trickle: OpenAiCompatibleClient;
    beforeAll(async () => {
      const http = await import('http');
      server = http.createServer((_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        const body = JSON.stringify({ id: 'x', object: 'chat.completion', created: 0, model: 'm', choices: [] });
        let i = 0;
        const t = setInterval(() => {
          if (res.destroyed || i >= body.length) {
            clearInterval(t);
            if (!res.destroyed) res.end();
            return;
          }
          res.write(body[i++]);
        }, 150);
      });
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      const { port } = server.address() as import('net').AddressInfo;
      trickle = new OpenAiCompatibleClient({
        baseUrl: `http://127.0.0.1:${port}/v1`,
        headers: {},
        timeoutMs: 500,
        connections: 2,
      });
    });
    afterAll(async () => {
      await trickle.close();
      server.closeAllConnections();
      server.close();
    });

    it('times the whole exchange out, not only the gaps', async () => {
      const err = await trickle.chat({ model: 'm', messages: [{ role: 'user', content: 'x' }] }).catch((e) => e);
      expect(err).toBeInstanceOf(UpstreamError);
      expect(err).toMatchObject({ kind: 'timeout' });
    });

    it('reports the caller leaving during the body as an abort, not a timeout', async () => {
      const ac = new AbortController();
      setTimeout(() => ac.abort(), 200);
      const err = await trickle
        .chat({ model: 'm', messages: [{ role: 'user', content: 'x' }] }, { signal: ac.signal })
        .catch((e) => e);
      expect(err).toBeInstanceOf(CallAbortedError);
    });
  });
});
