import request from 'supertest';
import { ConfigError } from '@app/platform';
import { createMembershipApp } from '../../apps/membership/src/membership.app';
import { createGatewayApp } from '../../apps/ai-gateway/src/gateway.app';
import { RunningApp, startGateway, startMembership } from '../support/apps';
import { createTestDatabase } from '../support/database';
import { TcpProxy, viaProxy } from '../support/tcp-proxy';

describe('foundation: both apps', () => {
  let membership: RunningApp;
  let gateway: RunningApp;

  beforeAll(async () => {
    const limits = { BODY_LIMIT_BYTES: '2048', PUBLIC_BODY_LIMIT_BYTES: '2048' };
    [membership, gateway] = await Promise.all([startMembership(limits), startGateway(limits)]);
  });
  afterAll(async () => {
    await Promise.all([membership?.close(), gateway?.close()]);
  });

  it.each([['membership'], ['ai-gateway']])('%s answers health UP with its database component', async (name) => {
    const app = name === 'membership' ? membership : gateway;
    const res = await request(app.url).get('/actuator/health').expect(200);
    expect(res.body).toEqual({
      status: 'UP',
      components: expect.objectContaining({ db: expect.objectContaining({ status: 'UP' }) }),
    });
    await request(app.url).get('/actuator/health/liveness').expect(200, { status: 'UP' });
    const ready = await request(app.url).get('/actuator/health/readiness').expect(200);
    expect(ready.body.status).toBe('UP');
  });

  it('membership: unknown route is a 404 envelope', async () => {
    const res = await request(membership.url).get('/api/v1/nothing-here').expect(404);
    expect(res.body).toEqual({ code: 404, message: expect.stringContaining('/api/v1/nothing-here'), data: null });
  });

  it('membership: malformed JSON is a 400 envelope', async () => {
    const res = await request(membership.url)
      .post('/api/v1/app/auth/login')
      .set('Content-Type', 'application/json')
      .send('{"account": "a",')
      .expect(400);
    expect(res.body).toEqual({ code: 400, message: expect.any(String), data: null });
  });

  it('membership: oversize body is a 413 envelope', async () => {
    const res = await request(membership.url)
      .post('/api/v1/app/auth/login')
      .set('Content-Type', 'application/json')
      .send(JSON.stringify({ account: 'x'.repeat(5000), password: 'y' }))
      .expect(413);
    expect(res.body).toEqual({ code: 413, message: expect.any(String), data: null });
  });

  it('membership: a route that is not public needs a token (default deny)', async () => {
    const res = await request(gateway.url).get('/v1/models');
    expect([401, 404]).toContain(res.status);
    expect(res.body.error).toEqual(expect.objectContaining({ message: expect.any(String), type: expect.any(String) }));
  });

  it('ai-gateway: errors use the OpenAI error shape (401, 404, 400, 413)', async () => {
    // The gateway authenticates before routing (authenticate-first.ts): an unknown path without a key is 401.
    const stranger = await request(gateway.url).get('/v1/definitely-not-here').expect(401);
    expect(stranger.body.error).toMatchObject({ type: 'invalid_request_error', code: 'invalid_api_key' });
    const admin = { Authorization: 'Bearer test-admin-token-0123456789' };
    const notFound = await request(gateway.url).get('/admin/definitely-not-here').set(admin).expect(404);
    expect(notFound.body).toEqual({
      error: { message: expect.any(String), type: 'invalid_request_error', code: 'not_found', param: null },
    });
    const bad = await request(gateway.url)
      .post('/admin/definitely-not-here')
      .set(admin)
      .set('Content-Type', 'application/json')
      .send('{oops')
      .expect(400);
    expect(bad.body.error.type).toBe('invalid_request_error');
    const big = await request(gateway.url)
      .post('/admin/x')
      .set(admin)
      .set('Content-Type', 'application/json')
      .send(JSON.stringify({ a: 'x'.repeat(5000) }))
      .expect(413);
    expect(big.body.error.code).toBe('payload_too_large');
  });

  it('echoes X-Request-Id, or generates one', async () => {
    const echoed = await request(membership.url).get('/actuator/health').set('X-Request-Id', 'abc-123');
    expect(echoed.headers['x-request-id']).toBe('abc-123');
    const generated = await request(gateway.url).get('/actuator/health');
    expect(generated.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('sets security headers (helmet)', async () => {
    const res = await request(membership.url).get('/actuator/health');
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['x-powered-by']).toBeUndefined();
  });

  it.each([['membership'], ['ai-gateway']])(
    '%s serves Swagger UI with its assets and the OpenAPI JSON with bearer auth',
    async (name) => {
      const app = name === 'membership' ? membership : gateway;
      const html = await request(app.url).get('/swagger-ui/index.html').expect(200);
      expect(html.headers['content-type']).toMatch(/text\/html/);
      const assets = [...html.text.matchAll(/(?:src|href)="\.?\/?([^"]+\.(?:js|css))"/g)].map((m) => m[1]);
      expect(assets.length).toBeGreaterThan(1);
      for (const asset of assets) {
        const res = await request(app.url).get(`/swagger-ui/${asset.replace(/^swagger-ui\//, '')}`);
        expect({ asset, status: res.status }).toEqual({ asset, status: 200 });
      }
      const doc = await request(app.url).get('/v3/api-docs').expect(200);
      expect(doc.body.openapi).toMatch(/^3\./);
      expect(doc.body.components.securitySchemes.bearer).toEqual(
        expect.objectContaining({ type: 'http', scheme: 'bearer' }),
      );
      expect(doc.body.paths['/actuator/health']).toBeDefined();
    },
  );

  it('exposes Prometheus metrics with per-route counts and latency histograms', async () => {
    await request(membership.url).get('/actuator/health/liveness').expect(200);
    const res = await request(membership.url).get('/actuator/prometheus').expect(200);
    expect(res.text).toMatch(
      /http_requests_total\{method="GET",route="\/actuator\/health\/liveness",status="200"\} \d+/,
    );
    expect(res.text).toMatch(
      /http_request_duration_seconds_bucket\{le="0.005",method="GET",route="\/actuator\/health\/liveness",status="200"\}/,
    );
  });
});

describe('foundation: CORS allowlist', () => {
  it('answers preflight for an allowed origin only', async () => {
    const app = await startMembership({ CORS_ORIGINS: 'https://www.example.com, https://admin.example.com' });
    try {
      const allowed = await request(app.url)
        .options('/api/v1/app/auth/login')
        .set('Origin', 'https://www.example.com')
        .set('Access-Control-Request-Method', 'POST');
      expect(allowed.status).toBe(204);
      expect(allowed.headers['access-control-allow-origin']).toBe('https://www.example.com');
      const refused = await request(app.url)
        .options('/api/v1/app/auth/login')
        .set('Origin', 'https://evil.example.net')
        .set('Access-Control-Request-Method', 'POST');
      expect(refused.headers['access-control-allow-origin']).toBeUndefined();
    } finally {
      await app.close();
    }
  });
});

describe('foundation: context path', () => {
  it('mounts membership routes, health and Swagger under CONTEXT_PATH', async () => {
    const app = await startMembership({ CONTEXT_PATH: '/member' });
    try {
      await request(app.url).get('/actuator/health').expect(200);
      await request(app.url).get('/swagger-ui/index.html').expect(200);
      const doc = await request(app.url).get('/v3/api-docs').expect(200);
      expect(doc.body.servers).toEqual([expect.objectContaining({ url: '/member' })]);
      const outside = await request(app.url.replace('/member', '')).get('/actuator/health').expect(404);
      expect(outside.body.code).toBe(404);
    } finally {
      await app.close();
    }
  });
});

describe('foundation: health follows the database', () => {
  it('goes DOWN with 503 when the database is unreachable and UP again when it returns', async () => {
    const db = await createTestDatabase();
    const target = new URL(db.url);
    const proxy = new TcpProxy(target.hostname, Number(target.port || 5432));
    const port = await proxy.start();
    const app = await startGateway({}, { dbUrl: viaProxy(db.url, port) });
    try {
      await request(app.url).get('/actuator/health/readiness').expect(200);
      await proxy.stop();
      const down = await request(app.url).get('/actuator/health');
      expect(down.status).toBe(503);
      expect(down.body.status).toBe('DOWN');
      expect(down.body.components.db.status).toBe('DOWN');
      await request(app.url).get('/actuator/health/readiness').expect(503);
      await request(app.url).get('/actuator/health/liveness').expect(200);
      await proxy.start(port);
      // Reconnecting takes what it takes on a loaded machine: waited for (Jest's timeout is the limit).
      let status = 0;
      while (status !== 200) {
        status = (await request(app.url).get('/actuator/health')).status;
        if (status !== 200) await new Promise((r) => setTimeout(r, 200));
      }
    } finally {
      await app.close();
      await proxy.stop();
      await db.drop();
    }
  });
});

describe('foundation: configuration is validated at boot', () => {
  it.each([
    ['MEMBERSHIP_PORT', 'abc', /MEMBERSHIP_PORT: "abc" is not a number/],
    ['DATABASE_URL', 'mysql://localhost/x', /DATABASE_URL: must be a postgres:\/\/ URL/],
    ['NODE_ENV', 'staging', /NODE_ENV/],
    ['LOG_LEVEL', 'loud', /LOG_LEVEL/],
    ['CONTEXT_PATH', 'no spaces allowed', /CONTEXT_PATH/],
  ])('membership refuses %s=%s', async (key, value, message) => {
    await expect(createMembershipApp({ DATABASE_URL: 'postgres://127.0.0.1:1/none', [key]: value })).rejects.toThrow(
      message,
    );
  });

  it('membership refuses production without JWT_SECRET', async () => {
    await expect(
      createMembershipApp({ NODE_ENV: 'production', DATABASE_URL: 'postgres://127.0.0.1:1/none' }),
    ).rejects.toBeInstanceOf(ConfigError);
  });

  it('membership refuses production without MFA_ENCRYPTION_SECRET (the development key derives from JWT_SECRET)', async () => {
    await expect(
      createMembershipApp({
        NODE_ENV: 'production',
        JWT_SECRET: 'x'.repeat(40),
        SMS_PROVIDER: 'aliyun',
        DATABASE_URL: 'postgres://127.0.0.1:1/none',
      }),
    ).rejects.toThrow(/MFA_ENCRYPTION_SECRET: required when NODE_ENV=production/);
    await expect(
      createMembershipApp({ MFA_ENCRYPTION_SECRET: 'too-short', DATABASE_URL: 'postgres://127.0.0.1:1/none' }),
    ).rejects.toThrow(/MFA_ENCRYPTION_SECRET: must be at least 32 characters/);
  });

  it('membership refuses OAuth clients in production without a fixed callback base URL', async () => {
    await expect(
      createMembershipApp({
        NODE_ENV: 'production',
        JWT_SECRET: 'x'.repeat(40),
        SMS_PROVIDER: 'aliyun',
        OAUTH2_CLIENTS_FILE: '/etc/clients.yaml',
        DATABASE_URL: 'postgres://127.0.0.1:1/none',
      }),
    ).rejects.toThrow(/OAUTH2_CALLBACK_BASE_URL: required/);
  });

  it('ai-gateway refuses a bad port and a short ADMIN_TOKEN', async () => {
    await expect(
      createGatewayApp({ AI_GATEWAY_PORT: '70000', ADMIN_TOKEN: 'short', DATABASE_URL: 'postgres://127.0.0.1:1/none' }),
    ).rejects.toThrow(/AI_GATEWAY_PORT[\s\S]*ADMIN_TOKEN|ADMIN_TOKEN[\s\S]*AI_GATEWAY_PORT/);
  });
});

describe('foundation: hostile bodies', () => {
  let app: RunningApp;
  beforeAll(async () => {
    // Bodies over the login route's 16 KiB are refused before their depth is checked: a larger limit here.
    app = await startMembership({ REQUEST_TIMEOUT_MS: '2000', PUBLIC_BODY_LIMIT_BYTES: '65536' });
  });
  afterAll(() => app?.close());

  it('refuses JSON nested thousands of levels deep with a 400 envelope, not a stack overflow', async () => {
    const deep = '{"a":'.repeat(5000) + '1' + '}'.repeat(5000);
    const res = await request(app.url)
      .post('/api/v1/app/auth/login')
      .set('Content-Type', 'application/json')
      .send(deep)
      .expect(400);
    expect(res.body).toEqual({ code: 400, message: expect.stringMatching(/nested deeper/), data: null });
  });

  it("answers 415 to a Content-Encoding named like one of Object.prototype's members, and lives on", async () => {
    // Such a name once found Object.prototype's member: the reader threw (500) and, when the body's end
    // came, the request's pipe to it threw outside any handler (the process died).
    for (const [path, encoding] of [
      ['/api/v1/app/auth/login', 'constructor'],
      ['/api/v1/app/auth/login', 'toString'],
      ['/api/v1/nothing-here', 'constructor'],
      ['/api/v1/nothing-here', '__proto__'],
    ]) {
      const res = await fetch(`${app.url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-encoding': encoding },
        body: '{"account":"a","password":"b"}',
      });
      expect({ path, encoding, status: res.status, body: await res.json() }).toEqual({
        path,
        encoding,
        status: 415,
        body: { code: 415, message: expect.any(String), data: null },
      });
    }
    await request(app.url).get('/actuator/health/liveness').expect(200);
  });

  it('refuses a UTF-16 JSON body nested thousands of levels deep as well (its depth is checked on its text)', async () => {
    // U+0122 is the bytes 22 01 in UTF-16LE: a scanner of the raw bytes read a '"' there and missed the nesting.
    const deep = `{"account":"\u0122","password":${'['.repeat(5000)}${']'.repeat(5000)}}`;
    const res = await fetch(`${app.url}/api/v1/app/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json; charset=utf-16le' },
      body: Buffer.from(deep, 'utf16le'),
    });
    expect({ status: res.status, body: await res.json() }).toEqual({
      status: 400,
      body: { code: 400, message: expect.stringMatching(/nested deeper/), data: null },
    });
  });

  it('answers 408 when a client announces more body than it sends', async () => {
    const net = await import('net');
    const { port, hostname } = new URL(app.url);
    // The body never completes: only the request timeout can produce an answer (a hang ends at Jest's timeout).
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = net.connect(Number(port), hostname, () => {
        socket.write(
          'POST /api/v1/app/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"account":',
        );
      });
      let data = '';
      socket.on('data', (d: Buffer) => (data += d.toString()));
      socket.on('close', () => resolve(data));
      socket.on('error', reject);
    });
    expect(answer).toMatch(/^HTTP\/1\.1 408/);
    expect(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4))).toEqual({
      code: 408,
      message: expect.stringMatching(/not received/),
      data: null,
    });
  });
});
