// The one HTTP pipeline per app (libs/platform/src/http/http-pipeline.ts): every route, the busiest
// (chat completions, embeddings, the member profile read) as any other, gets the same edge stages
// (request id, security headers, CORS, access log, metrics, the gateway's timing), body readers and
// authentication; each route is declared once, by its Nest controller.
import * as net from 'net';
import pino from 'pino';
import { DataSource } from 'typeorm';
import { AUTH_LIMITER } from '@app/auth';
import { AccessLog, pgPoolOf, securityHeaders } from '@app/platform';
import { GatewayAuthenticator } from '../../apps/ai-gateway/src/keys/gateway.authenticator';
import { ADMIN_TOKEN, GatewayFixture, startGatewayFixture } from '../ai-gateway/gateway-fixture';
import { RunningApp, startMembership } from '../support/apps';
import { FakeClock } from '../support/clock';

jest.setTimeout(90_000);

const SITE = 'https://site.example';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const PROFILE = '/api/v1/app/auth/profile';
let ids = 0;
const nextId = (tag: string) => `${tag}-${process.pid}-${++ids}`;

interface Answer {
  status: number;
  headers: Headers;
  text: string;
  json: any;
}

async function call(url: string, init: RequestInit = {}): Promise<Answer> {
  const res = await fetch(url, init);
  const text = await res.text();
  let json: unknown;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, text, json };
}

/** The CORS part of an answer: every access-control-* header, and whether Vary names Origin (envelope routes add Accept-Language). */
function corsPart(headers: Headers): Record<string, string> {
  const part = Object.fromEntries([...headers.entries()].filter(([k]) => k.startsWith('access-control-')).sort());
  return { ...part, 'vary-origin': String((headers.get('vary') ?? '').split(/,\s*/).includes('Origin')) };
}

/** Helmet's headers as the platform computes them, each present with its value. */
function expectSecurityHeaders(headers: Headers | Record<string, string>, what: string): void {
  const get = (name: string) => (headers instanceof Headers ? headers.get(name) : headers[name.toLowerCase()]);
  const expected = securityHeaders();
  expect(expected.length).toBeGreaterThan(5);
  for (const [name, value] of expected) expect({ what, name, value: get(name) }).toEqual({ what, name, value });
}

/** Captures the app's access log lines (level info and above) and resolves waiters by request id. */
function captureAccessLog(app: RunningApp) {
  const logger = app.app.get(AccessLog).logger;
  logger.level = 'info'; // e2e runs with LOG_LEVEL=silent; only this logger is turned up
  const lines: any[] = [];
  const waiting = new Map<string, () => void>();
  (logger as any)[pino.symbols.streamSym].write = (line: string) => {
    const parsed = JSON.parse(line);
    lines.push(parsed);
    waiting.get(parsed.req?.id)?.();
    return true;
  };
  return {
    lines,
    /** The lines of request `id`, once its line was written (it is written when the response finishes). */
    async of(id: string): Promise<any[]> {
      if (!lines.some((l) => l.req?.id === id)) await new Promise<void>((resolve) => waiting.set(id, resolve));
      waiting.delete(id);
      return lines.filter((l) => l.req?.id === id);
    },
  };
}

/** The value of one http_requests_total series (0 when absent). */
async function requestCount(baseUrl: string, method: string, route: string, status: string): Promise<number> {
  const text = (await call(`${baseUrl}/actuator/prometheus`)).text;
  const line = text
    .split('\n')
    .find((l) => l.startsWith(`http_requests_total{method="${method}",route="${route}",status="${status}"} `));
  return line ? Number(line.split(' ').pop()) : 0;
}

/** Sends a raw request whose body never completes; resolves with everything received until the server closes. */
function unfinishedBody(baseUrl: string, head: string, partialBody: string): Promise<string> {
  const { port, hostname } = new URL(baseUrl);
  return new Promise<string>((resolve, reject) => {
    const socket = net.connect(Number(port), hostname, () => socket.write(`${head}\r\n\r\n${partialBody}`));
    let data = '';
    socket.on('data', (d: Buffer) => (data += d.toString()));
    socket.on('close', () => resolve(data));
    socket.on('error', reject);
  });
}

function rawHeaders(answer: string): Record<string, string> {
  const head = answer.slice(0, answer.indexOf('\r\n\r\n')).split('\r\n').slice(1);
  return Object.fromEntries(
    head.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]),
  );
}

describe('http pipeline: gateway', () => {
  let f: GatewayFixture;
  let key: string;
  let limitedKey: string;
  let log: ReturnType<typeof captureAccessLog>;

  beforeAll(async () => {
    f = await startGatewayFixture({ CORS_ORIGINS: SITE, BODY_LIMIT_BYTES: '4096', REQUEST_TIMEOUT_MS: '1500' });
    key = (await f.createKey({ name: 'pipeline' })).key;
    limitedKey = (await f.createKey({ name: 'pipeline-rpm', requests_per_minute: 1000 })).key;
    log = captureAccessLog(f.gw);
  });
  afterAll(() => f?.close());
  afterEach(() => jest.restoreAllMocks());

  const chatBody = (extra: Record<string, unknown> = {}) =>
    JSON.stringify({ model: 'vendor-gpt-4', messages: [{ role: 'user', content: 'Hello there' }], ...extra });
  const embBody = () => JSON.stringify({ model: 'text-embedding-v3', input: 'hello' });
  const post = (path: string, body: string, headers: Record<string, string> = {}) =>
    call(`${f.gw.url}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
      body,
    });
  const get = (path: string, headers: Record<string, string> = {}) =>
    call(`${f.gw.url}${path}`, { headers: { authorization: `Bearer ${key}`, ...headers } });

  it('gives every route the same CORS headers, with and without Origin', async () => {
    for (const origin of [{ origin: SITE }, {}] as Array<Record<string, string>>) {
      const answers: Array<[string, Answer]> = [
        ['chat', await post('/v1/chat/completions', chatBody(), origin)],
        ['embeddings', await post('/v1/embeddings', embBody(), origin)],
        [
          'chat error',
          await post('/v1/chat/completions', chatBody(), { ...origin, authorization: 'Bearer sk-not-a-key' }),
        ],
        ['/v1/models', await get('/v1/models', origin)],
        ['health', await get('/actuator/health', origin)],
      ];
      const reference = corsPart(answers[3][1].headers);
      if ('origin' in origin) {
        expect(reference).toMatchObject({
          'access-control-allow-origin': SITE,
          'access-control-allow-credentials': 'true',
          'access-control-expose-headers': 'X-Request-Id,Retry-After,Content-Disposition',
        });
      } else {
        expect(reference['access-control-allow-origin']).toBeUndefined();
      }
      expect(reference['vary-origin']).toBe('true');
      for (const [what, a] of answers)
        expect({ what, origin, cors: corsPart(a.headers) }).toEqual({ what, origin, cors: reference });
      expect(answers.map(([, a]) => a.status)).toEqual([200, 200, 401, 200, 200]);
    }
  });

  it('answers a preflight on chat completions as CORS does for any route, without authenticating', async () => {
    const authenticate = jest.spyOn(f.gw.app.get(GatewayAuthenticator), 'authenticate');
    const preflight = (path: string) =>
      call(`${f.gw.url}${path}`, {
        method: 'OPTIONS',
        headers: {
          origin: SITE,
          'access-control-request-method': 'POST',
          'access-control-request-headers': 'authorization,content-type',
        },
      });
    const chat = await preflight('/v1/chat/completions');
    const models = await preflight('/v1/models');
    expect(chat.status).toBe(204);
    expect(corsPart(chat.headers)).toMatchObject({
      'access-control-allow-origin': SITE,
      'access-control-allow-credentials': 'true',
      'access-control-allow-methods': expect.stringContaining('POST'),
      'access-control-allow-headers': 'authorization,content-type',
      'access-control-max-age': '600',
    });
    expect(corsPart(chat.headers)).toEqual(corsPart(models.headers));
    expect(authenticate).not.toHaveBeenCalled();
  });

  it('every answer of chat completions and embeddings carries X-Request-Id and the security headers, errors included', async () => {
    const given = nextId('gw-given');
    const ok = await post('/v1/chat/completions', chatBody(), { 'x-request-id': given });
    expect(ok.status).toBe(200);
    expect(ok.headers.get('x-request-id')).toBe(given);
    const insane = await post('/v1/embeddings', embBody(), { 'x-request-id': 'not a sane id!' });
    expect(insane.status).toBe(200);
    expect(insane.headers.get('x-request-id')).toMatch(UUID);
    const stream = await post('/v1/chat/completions', chatBody({ stream: true }));
    expect(stream.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const cases: Array<[string, Answer, number]> = [
      ['chat', ok, 200],
      ['embeddings', insane, 200],
      ['stream', stream, 200],
      [
        'bad key',
        await post('/v1/chat/completions', chatBody(), {
          authorization: 'Bearer sk-not-a-key',
          'x-request-id': 'gw-bad-key',
        }),
        401,
      ],
      [
        'bad JSON',
        await post('/v1/chat/completions', '{"model": "vendor-gpt-4", ', { 'x-request-id': 'gw-bad-json' }),
        400,
      ],
      [
        'too large',
        await post('/v1/embeddings', JSON.stringify({ model: 'text-embedding-v3', input: 'x'.repeat(5000) }), {
          'x-request-id': 'gw-too-large',
        }),
        413,
      ],
      ['validation', await post('/v1/chat/completions', JSON.stringify({ model: 'vendor-gpt-4' })), 400],
    ];
    for (const [what, a, status] of cases) {
      expect({ what, status: a.status }).toEqual({ what, status });
      expect({ what, id: a.headers.get('x-request-id') }).toEqual({
        what,
        id: expect.stringMatching(/^(gw-|[0-9a-f]{8}-)/),
      });
      expectSecurityHeaders(a.headers, what);
      if (status >= 400)
        expect({ what, error: a.json?.error }).toEqual({
          what,
          error: expect.objectContaining({ message: expect.any(String), type: expect.any(String) }),
        });
    }
    expect(cases[3][1].headers.get('x-request-id')).toBe('gw-bad-key');
    expect(cases[4][1].headers.get('x-request-id')).toBe('gw-bad-json');
  });

  it('answers 408 with the edge headers and closes the connection when the body does not arrive in time', async () => {
    const answer = await unfinishedBody(
      f.gw.url,
      `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\nX-Request-Id: gw-slow-body`,
      '{"model":',
    );
    expect(answer).toMatch(/^HTTP\/1\.1 408 /);
    const headers = rawHeaders(answer);
    expect(headers.connection).toBe('close');
    expect(headers['x-request-id']).toBe('gw-slow-body');
    expect(headers['x-gateway-overhead-ms']).toMatch(/^\d+\.\d{2}$/);
    expectSecurityHeaders(headers, '408');
    expect(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)).error.message).toMatch(
      /not received within 1500 ms/,
    );
  });

  it('authenticates a refused key once, answers 401 in the OpenAI shape and counts one failure for the address', async () => {
    const authenticate = jest.spyOn(f.gw.app.get(GatewayAuthenticator), 'authenticate');
    const failed = jest.spyOn(
      f.gw.app.get<{ failed(req: unknown, res: unknown): Promise<void> }>(AUTH_LIMITER),
      'failed',
    );
    const upstreamCalls = f.openai.requests.length;
    const refused = await post('/v1/chat/completions', chatBody(), {
      authorization: 'Bearer sk-not-a-key',
      'x-forwarded-for': '203.0.113.50',
    });
    expect(refused.status).toBe(401);
    expect(refused.json).toEqual({
      error: expect.objectContaining({
        message: expect.any(String),
        type: 'invalid_request_error',
        code: 'invalid_api_key',
      }),
    });
    expect(authenticate).toHaveBeenCalledTimes(1);
    expect(failed).toHaveBeenCalledTimes(1);
    expect((failed.mock.calls[0][0] as { ip: string }).ip).toBe('203.0.113.50'); // the client's address (trust proxy: loopback)
    expect(f.openai.requests.length).toBe(upstreamCalls);
  });

  it('counts chat and embeddings calls under the route pattern, never the raw URL (a trailing slash included)', async () => {
    const before = await requestCount(f.gw.url, 'POST', '/v1/chat/completions', '200');
    const embBefore = await requestCount(f.gw.url, 'POST', '/v1/embeddings', '200');
    await post('/v1/chat/completions', chatBody());
    await post('/v1/chat/completions?trace=abc', chatBody());
    await post('/v1/chat/completions/', chatBody());
    await post('/v1/embeddings?x=1', embBody());
    expect((await requestCount(f.gw.url, 'POST', '/v1/chat/completions', '200')) - before).toBe(3);
    expect((await requestCount(f.gw.url, 'POST', '/v1/embeddings', '200')) - embBefore).toBe(1);
    const text = (await call(`${f.gw.url}/actuator/prometheus`)).text;
    expect(text).not.toMatch(/route="[^"]*\?/);
  });

  it("hands chat and embeddings to their controller's route without walking Express's router, under every URL variant Express routes there", async () => {
    const router = (f.gw.app.getHttpAdapter().getInstance() as unknown as { router: { handle: () => void } }).router;
    const walked = jest.spyOn(router, 'handle');
    const plain = await post('/v1/chat/completions', chatBody());
    expect(plain.status).toBe(200);
    for (const variant of ['/v1/chat/completions/', '/V1/Chat/Completions?trace=1']) {
      const other = await post(variant, chatBody());
      expect({ variant, status: other.status, object: other.json?.object }).toEqual({
        variant,
        status: 200,
        object: 'chat.completion',
      });
    }
    expect((await post('/v1/embeddings/', embBody())).status).toBe(200);
    // A refusal by the route's own validation, answered in the route's error shape.
    const bad = await post('/v1/chat/completions', chatBody({ temperature: 'hot' }));
    expect({ status: bad.status, type: bad.json?.error?.type }).toEqual({ status: 400, type: 'invalid_request_error' });
    expect(walked).not.toHaveBeenCalled();
    // A route with a parameter, and a path no route takes, go through Express's router.
    expect((await get('/v1/models/vendor-gpt-4')).status).toBe(200);
    expect((await post('/v1/chat/completions/x', chatBody())).status).toBe(404);
    expect(walked).toHaveBeenCalledTimes(2);
  });

  it('watches every answer for a client that stops taking it (cutStalledAnswer, from the edge stages)', async () => {
    const watched: Array<[string, number]> = [];
    const server = f.gw.app.getHttpServer();
    const onRequest = (req: import('http').IncomingMessage, res: import('http').ServerResponse) => {
      const writeHead = res.writeHead;
      res.writeHead = function (this: import('http').ServerResponse, ...args: unknown[]) {
        watched.push([req.url ?? '', res.listenerCount('prefinish')]);
        return (writeHead as (...a: unknown[]) => import('http').ServerResponse).apply(this, args);
      };
    };
    server.prependListener('request', onRequest);
    try {
      expect((await post('/v1/chat/completions', chatBody())).status).toBe(200);
      expect((await post('/v1/chat/completions', chatBody({ temperature: 'hot' }))).status).toBe(400);
      expect((await get('/v1/models')).status).toBe(200);
      expect((await call(`${f.gw.url}/v3/api-docs`)).status).toBe(200);
    } finally {
      server.off('request', onRequest);
    }
    expect(watched.map(([url]) => url)).toEqual([
      '/v1/chat/completions',
      '/v1/chat/completions',
      '/v1/models',
      '/v3/api-docs',
    ]);
    for (const [url, listeners] of watched) expect({ url, watched: listeners >= 1 }).toEqual({ url, watched: true });
  });

  it('writes one access log line per call: id, method, path without query, status', async () => {
    const cases: Array<[string, string, Record<string, string>, number, string]> = [
      [nextId('gw-log-ok'), '/v1/chat/completions', {}, 200, 'info'],
      [nextId('gw-log-query'), '/v1/chat/completions?secret=query-secret', {}, 200, 'info'],
      [nextId('gw-log-401'), '/v1/embeddings', { authorization: 'Bearer sk-not-a-key' }, 401, 'warn'],
    ];
    for (const [id, path, headers, status, level] of cases) {
      const a = await post(path, path.includes('embeddings') ? embBody() : chatBody(), {
        ...headers,
        'x-request-id': id,
      });
      expect(a.status).toBe(status);
      const lines = await log.of(id);
      expect(lines).toEqual([
        expect.objectContaining({
          level: pino.levels.values[level],
          app: 'ai-gateway',
          msg: 'request completed',
          req: { id, method: 'POST', url: path.split('?')[0], remoteAddress: expect.any(String) },
          res: { statusCode: status },
          responseTime: expect.any(Number),
        }),
      ]);
    }
    expect(JSON.stringify(log.lines)).not.toContain('query-secret');
  });

  it('every /v1 answer carries X-Gateway-Overhead-Ms, other routes do not', async () => {
    const v1: Array<[string, Answer]> = [
      ['chat', await post('/v1/chat/completions', chatBody())],
      ['stream', await post('/v1/chat/completions', chatBody({ stream: true }))],
      ['embeddings', await post('/v1/embeddings', embBody())],
      ['401', await post('/v1/chat/completions', chatBody(), { authorization: 'Bearer sk-not-a-key' })],
      ['400', await post('/v1/chat/completions', '{"model":')],
      ['404 model', await post('/v1/chat/completions', chatBody({ model: 'no-such-model' }))],
      ['/v1/models', await get('/v1/models')],
      ['404 under /v1', await get('/v1/no-such-route')],
    ];
    expect(v1.map(([w, a]) => [w, a.status])).toEqual([
      ['chat', 200],
      ['stream', 200],
      ['embeddings', 200],
      ['401', 401],
      ['400', 400],
      ['404 model', 404],
      ['/v1/models', 200],
      ['404 under /v1', 404],
    ]);
    for (const [what, a] of v1)
      expect({ what, overhead: a.headers.get('x-gateway-overhead-ms') }).toEqual({
        what,
        overhead: expect.stringMatching(/^\d+\.\d{2}$/),
      });
    const others: Array<[string, Answer]> = [
      ['health', await get('/actuator/health')],
      ['admin keys', await call(`${f.gw.url}/admin/keys`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })],
      ['404 outside /v1', await get('/no-such-route')],
    ];
    expect(others.map(([w, a]) => [w, a.status])).toEqual([
      ['health', 200],
      ['admin keys', 200],
      ['404 outside /v1', 404],
    ]);
    for (const [what, a] of others)
      expect({ what, overhead: a.headers.get('x-gateway-overhead-ms') }).toEqual({ what, overhead: null });
  });

  it("sends the key's x-ratelimit-* headers on chat and embeddings answers", async () => {
    const withLimit = { authorization: `Bearer ${limitedKey}` };
    const answers: Array<[string, Answer]> = [
      ['chat', await post('/v1/chat/completions', chatBody(), withLimit)],
      ['stream', await post('/v1/chat/completions', chatBody({ stream: true }), withLimit)],
      ['embeddings', await post('/v1/embeddings', embBody(), withLimit)],
      ['validation error', await post('/v1/chat/completions', JSON.stringify({ model: 'vendor-gpt-4' }), withLimit)],
    ];
    let remaining = 1000;
    for (const [what, a] of answers) {
      expect({ what, status: a.status }).toEqual({ what, status: what === 'validation error' ? 400 : 200 });
      const left = Number(a.headers.get('x-ratelimit-remaining-requests'));
      expect({
        what,
        limit: a.headers.get('x-ratelimit-limit-requests'),
        reset: a.headers.get('x-ratelimit-reset-requests'),
        fewer: left < remaining,
      }).toEqual({
        what,
        limit: '1000',
        reset: expect.stringMatching(/^(\d+m)?[\d.]+m?s$/),
        fewer: true,
      });
      remaining = left;
    }
    // A key without a per-minute limit has no such headers.
    expect((await post('/v1/chat/completions', chatBody())).headers.get('x-ratelimit-limit-requests')).toBeNull();
  });
});

describe('http pipeline: membership under CONTEXT_PATH', () => {
  let app: RunningApp;
  let token: string;
  let log: ReturnType<typeof captureAccessLog>;
  const ip = '198.51.100.23';

  async function member(target: RunningApp, username: string, from: string): Promise<string> {
    const send = (path: string, body: object) =>
      call(`${target.url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-forwarded-for': from },
        body: JSON.stringify(body),
      });
    expect((await send('/api/v1/app/auth/register', { username, password: 'pipeline-password' })).status).toBe(200);
    const login = await send('/api/v1/app/auth/login', { account: username, password: 'pipeline-password' });
    expect(login.status).toBe(200);
    return login.json.data.token;
  }
  const get = (path: string, headers: Record<string, string> = {}) =>
    call(`${app.url}${path}`, { headers: { authorization: `Bearer ${token}`, 'x-forwarded-for': ip, ...headers } });

  beforeAll(async () => {
    app = await startMembership({ CONTEXT_PATH: '/site', CORS_ORIGINS: SITE, RATE_LIMIT_PER_MINUTE: '1000' });
    expect(app.url).toMatch(/\/site$/);
    token = await member(app, 'pipeline_member', ip);
    log = captureAccessLog(app);
  });
  afterAll(() => app?.close());

  it('serves the profile under CONTEXT_PATH; a query string or a trailing slash gets the same answer', async () => {
    const plain = await get(PROFILE);
    expect(plain.status).toBe(200);
    expect(plain.json).toEqual({
      code: 200,
      message: expect.any(String),
      data: expect.objectContaining({ username: 'pipeline_member', roles: ['member'] }),
    });
    for (const variant of [`${PROFILE}?via=query`, `${PROFILE}/`]) {
      const other = await get(variant);
      expect({ variant, status: other.status, text: other.text }).toEqual({ variant, status: 200, text: plain.text });
    }
    expect((await get(`${PROFILE}/`, { authorization: 'Bearer not-a-jwt' })).status).toBe(401);
    expectSecurityHeaders(plain.headers, 'profile');
    expect(plain.headers.get('x-request-id')).toMatch(UUID);
    expect((await get(PROFILE, { 'x-request-id': 'site-probe-1' })).headers.get('x-request-id')).toBe('site-probe-1');
    // Outside the context path there is no such route.
    expect(
      (await call(`${app.url.replace(/\/site$/, '')}${PROFILE}`, { headers: { authorization: `Bearer ${token}` } }))
        .status,
    ).toBe(404);
  });

  it("hands the profile read to its controller's route without walking Express's router, under CONTEXT_PATH", async () => {
    const router = (app.app.getHttpAdapter().getInstance() as unknown as { router: { handle: () => void } }).router;
    const walked = jest.spyOn(router, 'handle');
    for (const variant of [PROFILE, `${PROFILE}/`, `${PROFILE}?via=query`]) {
      const answer = await get(variant);
      expect({ variant, status: answer.status, user: answer.json?.data?.username }).toEqual({
        variant,
        status: 200,
        user: 'pipeline_member',
      });
    }
    expect(walked).not.toHaveBeenCalled();
    walked.mockRestore();
  });

  it('gives the profile read and other routes the same CORS headers, with and without Origin', async () => {
    for (const origin of [{ origin: SITE }, {}] as Array<Record<string, string>>) {
      const answers: Array<[string, Answer]> = [
        ['profile', await get(PROFILE, origin)],
        ['profile 401', await get(PROFILE, { ...origin, authorization: 'Bearer not-a-jwt' })],
        ['identities', await get('/api/v1/app/oauth2/identities', origin)],
        ['health', await get('/actuator/health', origin)],
      ];
      expect(answers.map(([, a]) => a.status)).toEqual([200, 401, 200, 200]);
      const reference = corsPart(answers[2][1].headers);
      if ('origin' in origin) {
        expect(reference).toMatchObject({
          'access-control-allow-origin': SITE,
          'access-control-allow-credentials': 'true',
          'access-control-expose-headers': 'X-Request-Id,Retry-After,Content-Disposition',
        });
      } else {
        expect(reference['access-control-allow-origin']).toBeUndefined();
      }
      expect(reference['vary-origin']).toBe('true');
      for (const [what, a] of answers)
        expect({ what, origin, cors: corsPart(a.headers) }).toEqual({ what, origin, cors: reference });
    }
    const preflight = (path: string) =>
      call(`${app.url}${path}`, {
        method: 'OPTIONS',
        headers: {
          origin: SITE,
          'access-control-request-method': 'GET',
          'access-control-request-headers': 'authorization',
        },
      });
    const profile = await preflight(PROFILE);
    expect(profile.status).toBe(204);
    expect(corsPart(profile.headers)).toMatchObject({
      'access-control-allow-origin': SITE,
      'access-control-allow-methods': expect.stringContaining('GET'),
      'access-control-allow-headers': 'authorization',
    });
    expect(corsPart(profile.headers)).toEqual(corsPart((await preflight('/api/v1/app/oauth2/identities')).headers));
  });

  it('error answers of the profile read carry the request id and security headers, in the envelope', async () => {
    for (const auth of ['Bearer not-a-jwt', `Bearer ${token}x`]) {
      const id = nextId('site-401');
      const refused = await get(PROFILE, { authorization: auth, 'x-request-id': id });
      expect(refused.status).toBe(401);
      expect(refused.json).toEqual({ code: 401, message: expect.any(String), data: null });
      expect(refused.headers.get('x-request-id')).toBe(id);
      expectSecurityHeaders(refused.headers, auth);
    }
  });

  it('counts profile calls under the prefixed route pattern', async () => {
    const route = `/site${PROFILE}`;
    const before = await requestCount(app.url, 'GET', route, '200');
    const refusedBefore = await requestCount(app.url, 'GET', route, '401');
    await get(PROFILE);
    await get(`${PROFILE}?a=1`);
    await get(PROFILE, { authorization: 'Bearer not-a-jwt' });
    expect((await requestCount(app.url, 'GET', route, '200')) - before).toBe(2);
    expect((await requestCount(app.url, 'GET', route, '401')) - refusedBefore).toBe(1);
    expect((await call(`${app.url}/actuator/prometheus`)).text).not.toMatch(/route="[^"]*\?/);
  });

  it('writes one access log line per profile call: id, method, prefixed path without query, status', async () => {
    const cases: Array<[string, string, Record<string, string>, number, string]> = [
      [nextId('site-log-ok'), PROFILE, {}, 200, 'info'],
      [nextId('site-log-query'), `${PROFILE}?token=query-secret`, {}, 200, 'info'],
      [nextId('site-log-401'), PROFILE, { authorization: 'Bearer nope' }, 401, 'warn'],
    ];
    for (const [id, path, headers, status, level] of cases) {
      expect((await get(path, { ...headers, 'x-request-id': id })).status).toBe(status);
      expect(await log.of(id)).toEqual([
        expect.objectContaining({
          level: pino.levels.values[level],
          app: 'membership',
          msg: 'request completed',
          req: { id, method: 'GET', url: `/site${PROFILE}`, remoteAddress: expect.any(String) },
          res: { statusCode: status },
          responseTime: expect.any(Number),
        }),
      ]);
    }
    expect(JSON.stringify(log.lines)).not.toContain('query-secret');
    expect(JSON.stringify(log.lines)).not.toContain(token);
  });

  it('pgPoolOf gives the pg pool behind TypeORM: named queries with values work', async () => {
    const pool = pgPoolOf(app.app.get(DataSource));
    for (const n of [41, 1]) {
      const { rows } = await pool.query({ name: 'pipeline-probe', text: 'SELECT $1::int + 1 AS n', values: [n] });
      expect(rows).toEqual([{ n: n + 1 }]);
    }
    const { rows } = await pool.query({
      name: 'pipeline-members',
      text: 'SELECT username FROM members WHERE username = $1',
      values: ['pipeline_member'],
    });
    expect(rows).toEqual([{ username: 'pipeline_member' }]);
  });
});

describe('http pipeline: membership per-member limit on the profile read', () => {
  it('still applies: 429 envelope with Retry-After, request id and security headers', async () => {
    // A clock that stands still: the per-member minute (a fixed window) cannot end between the calls.
    const limited = await startMembership(
      { CONTEXT_PATH: '/site', RATE_LIMIT_PER_MINUTE: '3' },
      { clock: new FakeClock() },
    );
    try {
      const from = '198.51.100.77';
      const send = (path: string, body: object) =>
        call(`${limited.url}${path}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-forwarded-for': from },
          body: JSON.stringify(body),
        });
      expect(
        (await send('/api/v1/app/auth/register', { username: 'pipeline_limited', password: 'pipeline-password' }))
          .status,
      ).toBe(200);
      const token = (
        await send('/api/v1/app/auth/login', { account: 'pipeline_limited', password: 'pipeline-password' })
      ).json.data.token;
      const profile = () =>
        call(`${limited.url}${PROFILE}`, { headers: { authorization: `Bearer ${token}`, 'x-forwarded-for': from } });
      const statuses: number[] = [];
      for (let i = 0; i < 6; i++) statuses.push((await profile()).status);
      expect(statuses.slice(0, 3)).toEqual([200, 200, 200]);
      const refused = await profile();
      expect(refused.status).toBe(429);
      expect(refused.json).toEqual({ code: 429, message: expect.any(String), data: null });
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(refused.headers.get('x-request-id')).toMatch(UUID);
      expectSecurityHeaders(refused.headers, '429');
    } finally {
      await limited.close();
    }
  });
});
