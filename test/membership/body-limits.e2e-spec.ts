// Bodies are capped by their route (configure-http-app.ts, route-table.ts in libs/platform): a stranger
// on a public route (login, register, send-code...) sends at most PUBLIC_BODY_LIMIT_BYTES (16 KiB),
// inflated; a compressed body inflating past BODY_INFLATE_RATIO_MAX is refused; routes behind a token
// keep BODY_LIMIT_BYTES. Every refusal is the envelope's 413, before anything is parsed.
import { randomBytes, randomInt } from 'crypto';
import { request, type IncomingMessage, type ServerResponse } from 'http';
import { gzipSync } from 'zlib';
import { RunningApp, startMembership } from '../support/apps';

const LOGIN = '/api/v1/app/auth/login';
const SITE_CONFIG = '/api/v1/admin/system/site-config';

describe('membership: body limits per route and inflate ratio cap', () => {
  let app: RunningApp;
  const address = () => `203.0.113.${randomInt(1, 255)}`;

  beforeAll(async () => {
    app = await startMembership({ ADMIN_ACCOUNT: 'limits_admin', ADMIN_PASSWORD: 'admin-password-1' });
  });
  afterAll(() => app?.close());

  const send = async (method: string, path: string, body: string | Buffer, headers: Record<string, string> = {}) => {
    const res = await fetch(`${app.url}${path}`, {
      method,
      headers: { 'content-type': 'application/json', 'x-forwarded-for': address(), ...headers },
      body,
    });
    return { status: res.status, body: (await res.json()) as { code: number; message: string; data: any } };
  };
  const login = async () => {
    const res = await send('POST', LOGIN, JSON.stringify({ account: 'limits_admin', password: 'admin-password-1' }));
    expect(res.status).toBe(200);
    return res.body.data.token as string;
  };

  it('a login body over 16 KiB is 413 in the envelope, plain or compressed', async () => {
    const big = JSON.stringify({ account: 'limits_admin', password: 'x'.repeat(17 * 1024) });
    for (const [body, headers] of [
      [big, {}],
      [gzipSync(big), { 'content-encoding': 'gzip' }],
    ] as const) {
      const res = await send('POST', LOGIN, body, headers);
      expect(res).toEqual({
        status: 413,
        body: { code: 413, message: 'Request body too large (limit 16384 bytes)', data: null },
      });
    }
  });

  it('a 1 KiB gzip bomb to login, register or send-code is refused 413 once 16 KiB are inflated', async () => {
    const bomb = gzipSync(`{"a":[${'{},'.repeat(1_000_000)}{}]}`, { level: 9 });
    expect(bomb.length).toBeLessThan(4096);
    for (const path of [LOGIN, '/api/v1/app/auth/register', '/api/v1/app/auth/send-code']) {
      const res = await send('POST', path, bomb, { 'content-encoding': 'gzip' });
      expect([path, res.status, res.body.code, res.body.message]).toEqual([
        path,
        413,
        413,
        'Request body too large (limit 16384 bytes)',
      ]);
    }
  });

  it('normal login works, compressed too', async () => {
    const body = JSON.stringify({ account: 'limits_admin', password: 'admin-password-1' });
    expect((await send('POST', LOGIN, gzipSync(body), { 'content-encoding': 'gzip' })).status).toBe(200);
    await login();
  });

  it('a route behind a token reads bodies up to BODY_LIMIT_BYTES (a 200 KiB settings write is saved)', async () => {
    const token = await login();
    const values: Record<string, string> = {};
    for (let i = 0; i < 60; i++) values[`bulk.k${i}`] = randomBytes(2000).toString('hex');
    const body = JSON.stringify({ values });
    expect(body.length).toBeGreaterThan(200 * 1024);
    const res = await send('PUT', SITE_CONFIG, body, { authorization: `Bearer ${token}` });
    expect(res.status).toBe(200);
    expect(res.body.data.values['bulk.k59']).toBe(values['bulk.k59']);
    const over = await send('PUT', SITE_CONFIG, JSON.stringify({ values: { 'bulk.x': 'x'.repeat(1_100_000) } }), {
      authorization: `Bearer ${token}`,
    });
    expect(over).toEqual({
      status: 413,
      body: { code: 413, message: 'Request body too large (limit 1048576 bytes)', data: null },
    });
  });

  it('a member body of 5 000 unknown fields is 400 naming 20 of them and counting the rest (not every one of them)', async () => {
    const token = await login();
    const fields: Record<string, number | string> = { nickname: 'x' };
    for (let i = 0; i < 5000; i++) fields[`f${i}`] = 1;
    const res = await send('PUT', '/api/v1/app/auth/profile', JSON.stringify(fields), {
      authorization: `Bearer ${token}`,
    });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe(10000);
    expect(res.body.data.fields).toHaveLength(20);
    expect(res.body.message).toMatch(/; 4980 more invalid fields$/);
    const zh = await send('PUT', '/api/v1/app/auth/profile', JSON.stringify(fields), {
      authorization: `Bearer ${token}`,
      'accept-language': 'zh-CN',
    });
    expect(zh.body.message).toMatch(/；另有 4980 个字段无效$/);
  });

  it('a body of more than 10 000 object members is 413 before it is parsed (the audit: 95 000 fields held the event loop 4.6 s)', async () => {
    const token = await login();
    const fields: Record<string, number> = { nickname: 1 };
    for (let i = 0; i < 95_000; i++) fields[`f${i}`] = 1;
    const res = await send('PUT', '/api/v1/app/auth/profile', JSON.stringify(fields), {
      authorization: `Bearer ${token}`,
    });
    expect(res).toEqual({
      status: 413,
      body: { code: 413, message: 'Request body has more than 10000 objects, arrays and object members', data: null },
    });
  });

  it('a compressed body inflating more than 32 times is 413 in the envelope, under the route limit', async () => {
    const token = await login();
    const bomb = gzipSync(JSON.stringify({ values: { 'bulk.x': 'x'.repeat(200_000) } }));
    const res = await send('PUT', SITE_CONFIG, bomb, {
      authorization: `Bearer ${token}`,
      'content-encoding': 'gzip',
      'accept-language': 'zh-CN',
    });
    expect(res).toEqual({
      status: 413,
      body: { code: 413, message: '压缩的请求体解压后超过其大小的 32 倍', data: null },
    });
    const en = await send('PUT', SITE_CONFIG, bomb, { authorization: `Bearer ${token}`, 'content-encoding': 'gzip' });
    expect(en.body.message).toBe('Compressed request body inflates more than 32 times its size');
  });
  it('a stranger to a route that needs a token gets 401 with the body never read; an unknown path keeps its 404', async () => {
    const seen: Array<{ url: string; status: number; flowing: boolean | null; didRead: boolean }> = [];
    const server = app.app.getHttpServer();
    const watch = (req: IncomingMessage, res: ServerResponse) => {
      const writeHead = res.writeHead;
      res.writeHead = function (this: ServerResponse, ...args: any[]) {
        seen.push({ url: req.url ?? '', status: args[0], flowing: req.readableFlowing, didRead: req.readableDidRead });
        return (writeHead as any).apply(this, args);
      } as any;
    };
    server.on('request', watch);
    try {
      const bomb = gzipSync(JSON.stringify({ values: { 'bulk.x': 'x'.repeat(1_000_000) } }));
      for (const [method, path] of [
        ['PUT', SITE_CONFIG],
        ['PUT', '/api/v1/app/auth/profile'],
      ]) {
        const res = await send(method, path, bomb, { 'content-encoding': 'gzip', authorization: 'Bearer not-a-token' });
        expect(res.status).toBe(401);
        expect(seen.filter((x) => x.url === path).at(-1)).toEqual({
          url: path,
          status: 401,
          flowing: null,
          didRead: false,
        });
      }
      // Targets Express routes to the same handler: with a fragment, and in absolute form.
      for (const target of ['/api/v1/app/auth/profile#x', `http://${new URL(app.url).host}/api/v1/app/auth/profile`]) {
        const status = await new Promise<number>((resolve, reject) => {
          const url = new URL(app.url);
          const req = request(
            {
              host: url.hostname,
              port: url.port,
              method: 'PUT',
              path: target,
              headers: {
                'content-type': 'application/json',
                'content-encoding': 'gzip',
                authorization: 'Bearer not-a-token',
                'content-length': String(bomb.length),
              },
            },
            (res) => {
              res.resume();
              resolve(res.statusCode ?? 0);
            },
          );
          req.on('error', reject);
          req.end(bomb);
        });
        expect([target, status]).toEqual([target, 401]);
        expect(seen.filter((x) => x.url === target).at(-1)).toEqual({
          url: target,
          status: 401,
          flowing: null,
          didRead: false,
        });
      }
      const unknown = await send('POST', '/api/v1/no-such-route', JSON.stringify({ a: 1 }));
      expect(unknown).toMatchObject({ status: 404, body: { code: 404 } });
    } finally {
      server.off('request', watch);
    }
  });
});
