// The lean path (apps/ai-gateway/src/routing/lean-routes.ts) serves API clients' chat and embeddings
// calls outside Express and Nest's pipeline. It must answer exactly like the full pipeline: every case
// here is sent twice, once as API clients send it (lean path) and once with an Origin header (which
// always takes the full pipeline), and the answers are compared.
import * as net from 'net';
import OpenAI from 'openai';
import { LeanRoutes } from '../../apps/ai-gateway/src/routing/lean-routes';
import { GatewayFixture, startGatewayFixture } from './gateway-fixture';

jest.setTimeout(60_000);

const VOLATILE = new Set(['date', 'x-request-id', 'x-gateway-overhead-ms', 'content-length', 'keep-alive', 'connection', 'vary', 'access-control-allow-origin', 'access-control-allow-credentials', 'access-control-expose-headers']);

describe('gateway lean routes', () => {
  let f: GatewayFixture;
  let key: string;
  let served: jest.SpyInstance;

  beforeAll(async () => {
    f = await startGatewayFixture({ BODY_LIMIT_BYTES: '4096', REQUEST_TIMEOUT_MS: '1500' });
    key = (await f.createKey({ name: 'lean' })).key;
    served = jest.spyOn(f.gw.app.get(LeanRoutes) as any, 'serve');
  });
  afterAll(() => f?.close());
  beforeEach(() => served.mockClear());

  async function send(path: string, body: string, headers: Record<string, string> = {}) {
    const res = await fetch(`${f.gw.url}${path}`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers }, body });
    const text = await res.text();
    const kept = [...res.headers.entries()].filter(([k]) => !VOLATILE.has(k)).sort();
    return { status: res.status, text, json: text && !res.headers.get('content-type')?.startsWith('text/event-stream') ? JSON.parse(text) : undefined, headers: kept, raw: res.headers };
  }

  /** Same request on both paths; returns the lean answer after checking it matches the full pipeline's. */
  async function both(path: string, body: string, headers: Record<string, string> = {}, same: (x: any) => any = (x) => x) {
    const lean = await send(path, body, headers);
    const leanCalls = served.mock.calls.length;
    const full = await send(path, body, { ...headers, origin: 'https://site.example' });
    expect(served.mock.calls.length).toBe(leanCalls); // the Origin request did not take the lean path
    expect(lean.status).toBe(full.status);
    expect(same(lean.json)).toEqual(same(full.json));
    expect(lean.headers).toEqual(full.headers);
    for (const h of ['x-request-id', 'x-gateway-overhead-ms']) expect(lean.raw.get(h)).toBeTruthy();
    return { lean, leanCalls };
  }

  const chat = (extra: Record<string, unknown> = {}) => JSON.stringify({ model: 'vendor-gpt-4', messages: [{ role: 'user', content: 'Hello there' }], ...extra });
  const noIds = (b: any) => (b && b.id ? { ...b, id: 'x', created: 0 } : b);

  it('serves the openai SDK through the lean path', async () => {
    const client = new OpenAI({ apiKey: key, baseURL: `${f.gw.url}/v1`, maxRetries: 0 });
    const completion = await client.chat.completions.create({ model: 'vendor-gpt-4', messages: [{ role: 'user', content: 'Say hi' }] });
    expect(completion.model).toBe('vendor-gpt-4');
    expect(completion.choices[0].message.content).toEqual(expect.any(String));
    const stream = await client.chat.completions.create({ model: 'vendor-gpt-4', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'Say hi' }] });
    let text = '';
    let usage: unknown;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta?.content ?? '';
      if (chunk.usage) usage = chunk.usage;
    }
    expect(text.length).toBeGreaterThan(0);
    expect(usage).toEqual(expect.objectContaining({ total_tokens: expect.any(Number) }));
    const emb = await client.embeddings.create({ model: 'text-embedding-v3', input: ['a', 'b'] });
    expect(emb.data).toHaveLength(2);
    expect(served).toHaveBeenCalledTimes(3);
  });

  it('answers a completion like the full pipeline, with the same headers', async () => {
    const { lean, leanCalls } = await both('/v1/chat/completions', chat(), { 'x-request-id': 'lean-req-1' }, noIds);
    expect(leanCalls).toBe(1);
    expect(lean.status).toBe(200);
    expect(lean.raw.get('x-request-id')).toBe('lean-req-1');
    expect(lean.raw.get('content-security-policy')).toContain("default-src 'self'");
    expect(lean.raw.get('x-content-type-options')).toBe('nosniff');
  });

  it('sends the same headers as the full pipeline on streams, embeddings and errors', async () => {
    const stream = await both('/v1/chat/completions', chat({ stream: true }), {}, () => 'events');
    expect(stream.lean.raw.get('content-type')).toMatch(/^text\/event-stream/);
    expect(stream.lean.raw.get('x-content-type-options')).toBe('nosniff');
    const emb = await both('/v1/embeddings', JSON.stringify({ model: 'text-embedding-v3', input: 'hello' }), {}, (b) => ({ ...b, data: b.data.length }));
    expect(emb.lean.status).toBe(200);
    const err = await both('/v1/chat/completions', chat({ model: 'no-such-model' }));
    expect(err.lean.status).toBe(404);
    for (const r of [stream.lean, emb.lean, err.lean]) expect(r.raw.get('strict-transport-security')).toBeTruthy();
    expect(served).toHaveBeenCalledTimes(3);
  });

  it('answers bad bodies like the full pipeline', async () => {
    const cases: Array<[string, string, number]> = [
      ['validation', JSON.stringify({ model: 'vendor-gpt-4' }), 400],
      ['unknown field that could lengthen the answer', chat({ max_new_tokens: 1 }), 400],
      ['malformed JSON', '{"model": "vendor-gpt-4", ', 400],
      ['not an object', '"just a string"', 400],
      ['empty body', '', 400],
      ['too deep', '{"a":'.repeat(200) + '1' + '}'.repeat(200), 400],
      ['too large', chat({ messages: [{ role: 'user', content: 'x'.repeat(5000) }] }), 413],
      ['unknown model', chat({ model: 'no-such-model' }), 404],
      ['bad temperature', chat({ temperature: 9 }), 400],
    ];
    for (const [name, body, status] of cases) {
      served.mockClear();
      const { lean, leanCalls } = await both('/v1/chat/completions', body);
      expect({ name, status: lean.status }).toEqual({ name, status });
      expect({ name, leanCalls }).toEqual({ name, leanCalls: 1 });
      expect(lean.json.error).toEqual(expect.objectContaining({ message: expect.any(String), type: expect.any(String) }));
    }
    const emb = await both('/v1/embeddings', JSON.stringify({ model: 'text-embedding-v3' }));
    expect(emb.lean.status).toBe(400);
  });

  it('leaves refused keys, other content types and query strings to the full pipeline', async () => {
    const wrong = await send('/v1/chat/completions', chat(), { authorization: 'Bearer sk-not-a-key' });
    expect(wrong.status).toBe(401);
    expect(wrong.json.error.code).toBe('invalid_api_key');
    const noAuth = await fetch(`${f.gw.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: chat() });
    expect(noAuth.status).toBe(401);
    const form = await send('/v1/chat/completions', 'model=vendor-gpt-4', { 'content-type': 'application/x-www-form-urlencoded' });
    expect(form.status).toBe(400);
    const query = await send('/v1/chat/completions?x=1', chat());
    expect(query.status).toBe(200);
    expect(served).toHaveBeenCalledTimes(1); // the refused key: checked on the lean path, answered by the full one
  });

  it('answers 408 and closes the connection when the body does not arrive in time', async () => {
    const { port, hostname } = new URL(f.gw.url);
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = net.connect(Number(port), hostname, () => {
        socket.write(`POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"model":`);
      });
      let data = '';
      socket.on('data', (d) => (data += d));
      socket.on('close', () => resolve(data));
      socket.on('error', reject);
      setTimeout(() => reject(new Error('still hanging after 15 s')), 15_000).unref();
    });
    expect(answer).toMatch(/^HTTP\/1\.1 408/);
    expect(answer).toMatch(/\r\nconnection: close\r\n/i);
    expect(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)).error.message).toMatch(/not received within 1500 ms/);
    expect(served).toHaveBeenCalledTimes(1);
  });

  it('counts lean calls in the metrics under the route pattern', async () => {
    await send('/v1/chat/completions', chat());
    const text = await (await fetch(`${f.gw.url}/actuator/prometheus`)).text();
    const line = text.split('\n').find((l) => l.startsWith('http_requests_total{') && l.includes('route="/v1/chat/completions"') && l.includes('status="200"'));
    expect(line).toBeDefined();
    expect(Number(line!.split(' ').pop())).toBeGreaterThanOrEqual(4);
  });
});
