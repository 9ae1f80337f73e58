// Configuration errors say `x-should-retry: false` (the openai SDK then does not retry them),
// and keyed calls carry OpenAI's x-ratelimit-*-requests headers on every keyed route (chat, embeddings, models).
import OpenAI from 'openai';
import { GatewayFixture, startGatewayFixture } from './gateway-fixture';

describe('AI gateway response headers (x-should-retry, x-ratelimit-*)', () => {
  let f: GatewayFixture;

  beforeAll(async () => {
    f = await startGatewayFixture();
  });
  afterAll(async () => {
    await f?.close();
  });

  /** An openai SDK client that retries (twice, its default) and counts the HTTP requests it sends. */
  function countingClient(key: string): { client: OpenAI; sent: () => number } {
    let sent = 0;
    const client = new OpenAI({
      apiKey: key,
      baseURL: `${f.gw.url}/v1`,
      maxRetries: 2,
      timeout: 20_000,
      fetch: (url: any, init?: any) => {
        sent++;
        return fetch(url, init);
      },
    });
    return { client, sent: () => sent };
  }

  it('a 503 no_provider says x-should-retry: false, and the openai SDK sends it once', async () => {
    const { key } = await f.createKey({ name: 'no-retry' });
    const { client, sent } = countingClient(key);
    const upstreamBefore = f.openaiBackup.requests.length;
    // vendor-llama-70b's only deployment has weight 0: configured but not routable.
    const err: any = await client.chat.completions
      .create({ model: 'vendor-llama-70b', messages: [{ role: 'user', content: 'x' }] })
      .catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect(err.status).toBe(503);
    expect(err.error).toMatchObject({ code: 'no_provider' });
    expect(err.headers.get('x-should-retry')).toBe('false');
    expect(sent()).toBe(1);
    expect(f.openaiBackup.requests.length).toBe(upstreamBefore);

    // Embeddings, with a query string: the same header.
    const res = await fetch(`${f.gw.url}/v1/embeddings?via=full`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'text-embedding-v2', input: 'x' }),
    });
    expect(res.status).toBe(503);
    expect(res.headers.get('x-should-retry')).toBe('false');
  });

  it('an engine_unavailable 503 (no image upstream configured) says x-should-retry: false', async () => {
    const { key } = await f.createKey({ name: 'no-engine', scopes: ['vision'] });
    const { client, sent } = countingClient(key);
    const err: any = await client.images.generate({ prompt: 'a cat' }).catch((e) => e);
    expect(err.status).toBe(503);
    expect(err.error).toMatchObject({ code: 'engine_unavailable' });
    expect(err.headers.get('x-should-retry')).toBe('false');
    expect(sent()).toBe(1);
  });

  it('keyed calls answer x-ratelimit-*-requests from the key window, on every route, streamed and not', async () => {
    const { key } = await f.createKey({ name: 'rpm', requests_per_minute: 20 });
    const body = (stream: boolean) =>
      JSON.stringify({ model: 'vendor-gpt-4', messages: [{ role: 'user', content: 'hi' }], stream });
    const call = (path: string, payload: string) =>
      fetch(`${f.gw.url}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: payload,
      });
    const seen: Array<{ remaining: number; reset: string | null; limit: string | null }> = [];
    const cases: Array<[string, string, number]> = [
      ['/v1/chat/completions', body(false), 200], // lean
      ['/v1/chat/completions', body(true), 200], // lean, SSE
      ['/v1/chat/completions?via=full', body(false), 200], // full pipeline
      ['/v1/chat/completions?via=full', body(true), 200], // full pipeline, SSE
      ['/v1/chat/completions', JSON.stringify({ model: 'vendor-gpt-4', messages: [] }), 400], // lean, an error answer
      ['/v1/chat/completions?via=full', JSON.stringify({ model: 'vendor-gpt-4', messages: [] }), 400], // full, an error answer
    ];
    for (const [path, payload, status] of cases) {
      const res = await call(path, payload);
      await res.arrayBuffer();
      expect([path, res.status]).toEqual([path, status]);
      seen.push({
        limit: res.headers.get('x-ratelimit-limit-requests'),
        remaining: Number(res.headers.get('x-ratelimit-remaining-requests')),
        reset: res.headers.get('x-ratelimit-reset-requests'),
      });
    }
    // Each call is one more hit in the window (no hit leaves a 60 s window while these run).
    expect(seen.map((s) => s.limit)).toEqual(Array(cases.length).fill('20'));
    expect(seen.map((s) => s.remaining)).toEqual([19, 18, 17, 16, 15, 14]);
    // OpenAI's duration format: the window is back to its initial state 60 to 61 s after the newest hit.
    for (const s of seen) expect(s.reset).toMatch(/^1m(0|0\.\d{1,3}|1)s$/);
  });

  it('the refused call says remaining 0; keys without requests_per_minute send no x-ratelimit headers', async () => {
    const { key } = await f.createKey({ name: 'rpm-2', requests_per_minute: 2 });
    const client = new OpenAI({ apiKey: key, baseURL: `${f.gw.url}/v1`, maxRetries: 0 });
    for (const expected of ['1', '0']) {
      const { response } = await client.chat.completions
        .create({ model: 'vendor-gpt-4', messages: [{ role: 'user', content: 'x' }] })
        .withResponse();
      expect(response.headers.get('x-ratelimit-remaining-requests')).toBe(expected);
    }
    const refused: any = await client.chat.completions
      .create({ model: 'vendor-gpt-4', messages: [{ role: 'user', content: 'x' }] })
      .catch((e) => e);
    expect(refused.status).toBe(429);
    expect(refused.headers.get('x-ratelimit-limit-requests')).toBe('2');
    expect(refused.headers.get('x-ratelimit-remaining-requests')).toBe('0');
    expect(refused.headers.get('x-ratelimit-reset-requests')).toMatch(/^1m/);

    const unlimited = await f.createKey({ name: 'unlimited' });
    const open = new OpenAI({ apiKey: unlimited.key, baseURL: `${f.gw.url}/v1`, maxRetries: 0 });
    const { response } = await open.chat.completions
      .create({ model: 'vendor-gpt-4', messages: [{ role: 'user', content: 'x' }] })
      .withResponse();
    expect(response.status).toBe(200);
    expect(response.headers.get('x-ratelimit-limit-requests')).toBeNull();
    expect(response.headers.get('x-ratelimit-remaining-requests')).toBeNull();
  });
});
