// The gateway authenticates before it reads a body: a stranger's body (a gzip bomb, or one never sent
// in full) is answered 401/429 without being read, inflated or parsed (authenticate-first.ts in
// libs/platform); keyed calls read theirs as before, and the key is checked and counted once per call.
import type { IncomingMessage, ServerResponse } from 'http';
import * as net from 'net';
import { gzipSync } from 'zlib';
import { ModulesContainer } from '@nestjs/core';
import { controllerRoutes } from '@app/platform';
import { GatewayFixture, startGatewayFixture } from './gateway-fixture';

const LIMIT = 5;

/** `{"a":[{},{},…]}` of `bytes` bytes, gzipped (about 1000:1). */
function gzipBomb(bytes: number): Buffer {
  const items = Math.floor((bytes - 8) / 3);
  return gzipSync(Buffer.from(`{"a":[${'{},'.repeat(items)}{}]}`), { level: 9 });
}

interface Seen {
  url: string;
  status: number;
  /** The request stream's state when the answer's head was written: null / false = nobody had read from it. */
  flowing: boolean | null;
  didRead: boolean;
}

describe('AI gateway: authentication before the body', () => {
  let f: GatewayFixture;
  const seen: Seen[] = [];
  const bomb = gzipBomb(16 * 1024 * 1024);
  // Each call that asks its own client address a different one (the refused-credential limit counts per
  // address): a random pick could repeat one an earlier test had counted (CI once saw the 429 a call early).
  let addresses = 0;
  const address = () => `198.51.100.${++addresses}`;

  beforeAll(async () => {
    f = await startGatewayFixture({ RATE_LIMIT_PER_MINUTE: String(LIMIT), REQUEST_TIMEOUT_MS: '120000' });
    // A second listener of the app's server: it sees each request after the app's handler took it, and
    // records whether anything had read the request's body when the answer was written.
    f.gw.app.getHttpServer().on('request', (req: IncomingMessage, res: ServerResponse) => {
      const writeHead = res.writeHead;
      res.writeHead = function (this: ServerResponse, ...args: any[]) {
        seen.push({ url: req.url ?? '', status: args[0], flowing: req.readableFlowing, didRead: req.readableDidRead });
        return (writeHead as any).apply(this, args);
      } as any;
    });
  });
  afterAll(async () => {
    await f?.close();
  });

  const post = (path: string, key: string | undefined, from: string, body: Buffer = bomb) =>
    fetch(`${f.gw.url}${path}`, {
      method: 'POST',
      headers: {
        ...(key ? { authorization: `Bearer ${key}` } : {}),
        'content-type': 'application/json',
        'content-encoding': 'gzip',
        'x-forwarded-for': from,
      },
      body,
    });
  const lastSeen = (url: string) => seen.filter((s) => s.url === url).at(-1);

  it('a gzip bomb without a key, with a wrong key, to a trailing-slash variant, an unknown path or /admin/keys: 401, the body never read', async () => {
    const cases: Array<[string, string | undefined, string]> = [
      ['/v1/chat/completions', undefined, 'invalid_api_key'],
      ['/v1/chat/completions?via=full', 'sk-wrong-key', 'invalid_api_key'],
      ['/v1/chat/completions/', 'sk-wrong-key', 'invalid_api_key'],
      ['/V1/Chat/Completions', undefined, 'invalid_api_key'],
      ['/v1/embeddings', undefined, 'invalid_api_key'],
      ['/v1/no-such-route', undefined, 'invalid_api_key'],
      ['/actuator/health', undefined, 'invalid_api_key'], // public for GET only
      ['/admin/keys', 'wrong-admin-token', 'invalid_admin_token'],
    ];
    for (const [path, key, code] of cases) {
      const res = await post(path, key, address());
      const body = await res.json();
      expect([path, res.status, body.error?.code]).toEqual([path, 401, code]);
      expect(res.headers.get('connection')).toBe('close');
      expect(lastSeen(path)).toEqual({ url: path, status: 401, flowing: null, didRead: false });
    }
  });

  it('a body announced and never sent in full is answered 401 anyway, and the connection is closed', async () => {
    const { port } = new URL(f.gw.url);
    const socket = net.connect(Number(port), '127.0.0.1');
    const answer = new Promise<string>((resolve, reject) => {
      let text = '';
      socket.on('data', (d) => (text += d.toString('latin1')));
      socket.on('close', () => resolve(text));
      socket.on('error', reject);
    });
    socket.write(
      'POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer sk-wrong-key\r\nContent-Type: application/json\r\n' +
        `Content-Encoding: gzip\r\nX-Forwarded-For: ${address()}\r\nContent-Length: ${bomb.length}\r\n\r\n`,
    );
    socket.write(bomb.subarray(0, 1024));
    // Resolves when the server closes the connection: it does not wait for the rest of the body.
    const text = await answer;
    expect(text).toMatch(/^HTTP\/1\.1 401 /);
    expect(text).toMatch(/\r\nconnection: close\r\n/i);
    expect(text).toContain('"invalid_api_key"');
  });

  it('refused keys still reach the per-address 429, every one answered without reading its body', async () => {
    const from = address();
    const statuses: number[] = [];
    for (let i = 0; i < LIMIT + 2; i++) {
      const res = await post('/v1/chat/completions', `sk-wrong-${i}`, from);
      await res.arrayBuffer();
      statuses.push(res.status);
      expect(lastSeen('/v1/chat/completions')).toMatchObject({ flowing: null, didRead: false });
    }
    expect(statuses).toEqual([...Array(LIMIT).fill(401), 429, 429]);
  });

  it('public routes answer without a key: health (and its trailing-slash variant), the OpenAPI document, Swagger UI', async () => {
    const from = address();
    for (const path of [
      '/actuator/health/liveness',
      '/actuator/health/liveness/',
      '/v3/api-docs',
      '/swagger-ui/index.html',
    ]) {
      const res = await fetch(`${f.gw.url}${path}`, { headers: { 'x-forwarded-for': from } });
      await res.arrayBuffer();
      expect([path, res.status]).toEqual([path, 200]);
    }
  });

  it('a keyed call reads its gzip body as before and is counted once per call (chat completions, then a GET)', async () => {
    const { key } = await f.createKey({ name: 'gzip', requests_per_minute: 20 });
    const from = address();
    const chat = gzipSync(
      Buffer.from(JSON.stringify({ model: 'vendor-gpt-4', messages: [{ role: 'user', content: 'hi' }] })),
    );
    const remaining: number[] = [];
    for (const path of ['/v1/chat/completions', '/v1/chat/completions?via=full']) {
      const res = await post(path, key, from, chat);
      const body = await res.json();
      expect([path, res.status, body.object]).toEqual([path, 200, 'chat.completion']);
      remaining.push(Number(res.headers.get('x-ratelimit-remaining-requests')));
    }
    const models = await fetch(`${f.gw.url}/v1/models`, { headers: { authorization: `Bearer ${key}` } });
    expect(models.status).toBe(200);
    remaining.push(Number(models.headers.get('x-ratelimit-remaining-requests')));
    expect(remaining).toEqual([19, 18, 17]);
  });

  it("a known key over its requests_per_minute keeps its connection when its body is small (dropped, never parsed); a stranger's or a large body's connection is closed", async () => {
    const { key } = await f.createKey({ name: 'rpm-keepalive', requests_per_minute: 1 });
    const { port } = new URL(f.gw.url);
    const socket = net.connect(Number(port), '127.0.0.1');
    let text = '';
    let closed = false;
    const waiters: Array<() => void> = [];
    const wake = () => waiters.splice(0).forEach((w) => w());
    socket.on('data', (d) => ((text += d.toString('latin1')), wake()));
    socket.on('close', () => ((closed = true), wake()));
    /** The next whole answer on the socket (head and Content-Length body), taken off `text`. */
    const answer = async (): Promise<string> => {
      for (;;) {
        const head = text.indexOf('\r\n\r\n');
        const length = /\r\ncontent-length: (\d+)\r\n/i.exec(text.slice(0, head));
        if (head >= 0 && length && text.length >= head + 4 + Number(length[1])) {
          const one = text.slice(0, head + 4 + Number(length[1]));
          text = text.slice(one.length);
          return one;
        }
        if (closed) throw new Error(`connection closed with ${JSON.stringify(text)}`);
        await new Promise<void>((r) => waiters.push(r));
      }
    };
    const chat = (body: string, extra = '') =>
      'POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n' +
      `Authorization: Bearer ${key}\r\nX-Forwarded-For: ${address()}\r\n${extra}Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
    const small = JSON.stringify({ model: 'vendor-gpt-4', messages: [{ role: 'user', content: 'hi' }] });
    socket.write(chat(small));
    expect(await answer()).toMatch(/^HTTP\/1\.1 200 /);
    socket.write(chat(small));
    const refused = await answer();
    expect(refused).toMatch(/^HTTP\/1\.1 429 /);
    expect(refused).not.toMatch(/\r\nconnection: close\r\n/i);
    // The same connection answers the next request: the refused call's body was read off the wire.
    expect(lastSeen('/v1/chat/completions')).toMatchObject({ flowing: null, didRead: false });
    socket.write('GET /actuator/health/liveness HTTP/1.1\r\nHost: x\r\n\r\n');
    expect(await answer()).toMatch(/^HTTP\/1\.1 200 /);
    // Past DRAIN_MAX_BYTES (64 KiB) the connection is closed after the answer, the body unread.
    socket.write(
      'POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n' +
        `Authorization: Bearer ${key}\r\nContent-Length: ${64 * 1024 + 1}\r\n\r\n{"model":`,
    );
    const large = await answer();
    expect(large).toMatch(/^HTTP\/1\.1 429 /);
    expect(large).toMatch(/\r\nconnection: close\r\n/i);
    await new Promise<void>((r) => (closed ? r() : socket.once('close', () => r())));

    // A stranger with a small body: 401 and the connection closed, its body not read.
    const res = await fetch(`${f.gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: {
        authorization: 'Bearer sk-wrong-small',
        'content-type': 'application/json',
        'x-forwarded-for': address(),
      },
      body: small,
    });
    expect(res.status).toBe(401);
    expect(res.headers.get('connection')).toBe('close');
    await res.arrayBuffer();
  });

  it('a kept connection whose refused body does not arrive within REQUEST_TIMEOUT_MS is closed', async () => {
    const slow = await startGatewayFixture({ REQUEST_TIMEOUT_MS: '1000' });
    try {
      const { key } = await slow.createKey({ name: 'rpm-slow-body', requests_per_minute: 1 });
      await (await fetch(`${slow.gw.url}/v1/models`, { headers: { authorization: `Bearer ${key}` } })).arrayBuffer();
      const socket = net.connect(Number(new URL(slow.gw.url).port), '127.0.0.1');
      let text = '';
      socket.on('data', (d) => (text += d.toString('latin1')));
      const closed = new Promise<void>((r) => socket.on('close', () => r()));
      // Refused (over its requests_per_minute), announced 100 bytes, sends 10 and stops.
      socket.write(
        `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"model":1`,
      );
      await closed;
      expect(text).toMatch(/^HTTP\/1\.1 429 /);
      expect(text).not.toMatch(/\r\nconnection: close\r\n/i);
    } finally {
      await slow.close();
    }
  });

  /** A keyed chat call with a body of `bytes` (a valid request padded with whitespace). */
  const keyedChat = (key: string, bytes = 64 * 1024) => {
    const json = JSON.stringify({ model: 'vendor-gpt-4', messages: [{ role: 'user', content: 'hi' }] });
    return fetch(`${f.gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'x-forwarded-for': address() },
      body: json + ' '.repeat(Math.max(0, bytes - json.length)),
    });
  };

  it('a key whose budget is used up is refused before its body, on every metered route, until the budget changes; its other routes answer', async () => {
    const { id, key } = await f.createKey({ name: 'spent', budget_yuan: 10, budget_period: 'daily' });
    const first = await keyedChat(key, 100);
    expect(first.status).toBe(200);
    await first.arrayBuffer();
    const spent = (await f.admin('GET', `/admin/keys/${id}`)).body.budget_usage.spent_yuan;
    expect(spent).toBeGreaterThan(0);
    // The budget lowered to what was spent: used up for the rest of the day.
    expect((await f.admin('PATCH', `/admin/keys/${id}`, { budget_yuan: spent })).status).toBe(200);

    // The first refusal is the shared state's (the body was read and counted to ask it).
    const byStore = await keyedChat(key);
    expect(byStore.status).toBe(429);
    expect((await byStore.json()).error.code).toBe('insufficient_quota');
    expect(lastSeen('/v1/chat/completions')).toMatchObject({ status: 429, didRead: true });

    // From then on this replica refuses the key's metered calls before reading a byte of their bodies.
    for (const path of ['/v1/chat/completions', '/v1/embeddings', '/v1/responses']) {
      const res = await fetch(`${f.gw.url}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'x-forwarded-for': address() },
        body: `{"model":"vendor-gpt-4","input":"${'x'.repeat(100_000)}"}`,
      });
      const body = await res.json();
      expect([path, res.status, body.error?.code]).toEqual([path, 429, 'insufficient_quota']);
      expect(body.error.message).toContain('the daily budget of API key "spent"');
      expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(lastSeen(path)).toEqual({ url: path, status: 429, flowing: null, didRead: false });
    }
    // What is not metered still answers: the key's models and usage.
    for (const path of ['/v1/models', '/v1/usage']) {
      const res = await fetch(`${f.gw.url}${path}`, { headers: { authorization: `Bearer ${key}` } });
      await res.arrayBuffer();
      expect([path, res.status]).toEqual([path, 200]);
    }
    // A larger budget is another plan: asked of the shared state again, and admitted.
    expect((await f.admin('PATCH', `/admin/keys/${id}`, { budget_yuan: 10 })).status).toBe(200);
    const again = await keyedChat(key, 100);
    expect(again.status).toBe(200);
    await again.arrayBuffer();
  });

  it('every POST route of /v1 is @Metered() (each admits a call against the key limits)', () => {
    const posts = controllerRoutes(f.gw.app.get(ModulesContainer), '').filter(
      (r) => r.method === 'POST' && r.path.startsWith('/v1/'),
    );
    expect(posts.length).toBeGreaterThanOrEqual(14);
    expect(posts.filter((r) => !r.metered).map((r) => r.path)).toEqual([]);
  });

  it('a key whose max_concurrent_requests are all running in this replica is refused before its body; after one ends it is admitted', async () => {
    const { key } = await f.createKey({ name: 'busy', max_concurrent_requests: 1 });
    let release!: () => void;
    f.openai.behaviour.holdAfterChunks = 1;
    f.openai.behaviour.hold = new Promise<void>((r) => (release = r));
    try {
      const running = await fetch(`${f.gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'vendor-gpt-4', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
      });
      expect(running.status).toBe(200);
      const reader = running.body!.getReader();
      await reader.read(); // its first chunk: the call holds its lease

      const refused = await keyedChat(key);
      const body = await refused.json();
      expect([refused.status, body.error?.param]).toEqual([429, 'max_concurrent_requests']);
      expect(refused.headers.get('retry-after')).toBe('1');
      expect(lastSeen('/v1/chat/completions')).toEqual({
        url: '/v1/chat/completions',
        status: 429,
        flowing: null,
        didRead: false,
      });

      release();
      while (!(await reader.read()).done);
    } finally {
      release?.();
      f.openai.behaviour.holdAfterChunks = undefined;
      f.openai.behaviour.hold = undefined;
    }
    // Its lease ended with its call: the next one is read and admitted.
    for (let settled = false; !settled;) {
      const res = await keyedChat(key, 100);
      await res.arrayBuffer();
      // The stream's settlement runs after its last chunk was written: at most one refusal while it does.
      settled = res.status === 200;
      if (!settled) expect(res.status).toBe(429);
    }
  });

  it('a keyed gzip bomb is refused 413 once it inflates past the ratio cap, in the OpenAI error shape', async () => {
    const { key } = await f.createKey({ name: 'bomb' });
    const res = await post('/v1/chat/completions', key, address());
    const body = await res.json();
    expect(res.status).toBe(413);
    expect(body.error).toMatchObject({ message: expect.stringContaining('inflates more than 32 times') });
  });
});
