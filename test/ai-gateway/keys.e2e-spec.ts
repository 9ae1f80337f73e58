import OpenAI from 'openai';
import { rawRequest } from '../hardening/support/http';
import { Client } from 'pg';
import { RunningApp, startGateway } from '../support/apps';
import { ADMIN_TOKEN, GatewayFixture, startGatewayFixture } from './gateway-fixture';
import { queryRows } from '../support/database';

describe('AI gateway API keys', () => {
  let f: GatewayFixture;
  const sdk = (key: string, url = f.gw.url) => new OpenAI({ apiKey: key, baseURL: `${url}/v1`, maxRetries: 0 });
  const ask = { model: 'vendor-gpt-4-mini', messages: [{ role: 'user' as const, content: 'hi' }] };

  beforeAll(async () => {
    f = await startGatewayFixture({ AI_KEY_CACHE_TTL_MS: '500' });
  });
  afterAll(() => f?.close());

  it('shows the key once, stores only its hash, and lists without secrets', async () => {
    const created = await f.admin('POST', '/admin/keys', {
      name: 'demo',
      scopes: ['chat'],
      models: ['vendor-gpt-4-mini'],
      requests_per_minute: 60,
      budget_yuan: 10,
      expires_at: '2099-01-01T00:00:00Z',
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      name: 'demo',
      scopes: ['chat'],
      models: ['vendor-gpt-4-mini'],
      requests_per_minute: 60,
      budget_yuan: 10,
      spent_yuan: 0,
      remaining_yuan: 10,
      status: 'active',
    });
    expect(created.body.key).toMatch(/^sk-[A-Za-z0-9_-]{43}$/);
    expect(created.body.key.startsWith(created.body.prefix)).toBe(true);

    const db = new Client({ connectionString: f.gw.dbUrl });
    await db.connect();
    const { rows } = await db.query('SELECT * FROM ai_api_keys WHERE id = $1', [created.body.id]);
    await db.end();
    expect(rows[0].key_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(JSON.stringify(rows[0])).not.toContain(created.body.key);

    const list = await f.admin('GET', '/admin/keys');
    expect(list.status).toBe(200);
    expect(list.body.data.some((k: any) => k.id === created.body.id)).toBe(true);
    expect(JSON.stringify(list.body)).not.toContain(created.body.key);
    const one = await f.admin('GET', `/admin/keys/${created.body.id}`);
    expect(one.body.key).toBeUndefined();
    expect(one.body.prefix).toBe(created.body.prefix);
  });

  it('guards the admin API with the admin token', async () => {
    const { key } = await f.createKey();
    for (const auth of [undefined, 'Bearer wrong-token-wrong-token', `Bearer ${key}`]) {
      const res = await fetch(`${f.gw.url}/admin/keys`, { headers: auth ? { authorization: auth } : {} });
      expect(res.status).toBe(401);
      expect((await res.json()).error).toHaveProperty('message');
    }
  });

  it('validates admin input with the field named', async () => {
    const cases: Array<[unknown, string]> = [
      [{}, 'name'],
      [{ name: 'x', scopes: ['everything'] }, 'scopes'],
      [{ name: 'x', budget_yuan: -1 }, 'budget_yuan'],
      [{ name: 'x', requests_per_minute: 0 }, 'requests_per_minute'],
      [{ name: 'x', expires_at: 'tomorrow' }, 'expires_at'],
    ];
    for (const [body, param] of cases) {
      const res = await f.admin('POST', '/admin/keys', body);
      expect(res.status).toBe(400);
      expect(res.body.error.param).toBe(param);
    }
    expect((await f.admin('GET', '/admin/keys/not-a-uuid')).status).toBe(404);
    expect((await f.admin('PATCH', '/admin/keys/00000000-0000-4000-8000-000000000000', { name: 'y' })).status).toBe(
      404,
    );
  });

  it('enforces scopes and the model allowlist with 403', async () => {
    const { key: embOnly } = await f.createKey({ scopes: ['embeddings'] });
    const scopeErr: any = await sdk(embOnly)
      .chat.completions.create(ask)
      .catch((e) => e);
    expect(scopeErr).toBeInstanceOf(OpenAI.PermissionDeniedError);
    expect(scopeErr.error.code).toBe('scope_not_allowed');
    const { key: miniOnly } = await f.createKey({ models: ['vendor-gpt-4-mini'] });
    await expect(sdk(miniOnly).chat.completions.create(ask)).resolves.toBeTruthy();
    const modelErr: any = await sdk(miniOnly)
      .chat.completions.create({ ...ask, model: 'vendor-gpt-4' })
      .catch((e) => e);
    expect(modelErr).toBeInstanceOf(OpenAI.PermissionDeniedError);
    expect(modelErr.error).toMatchObject({ code: 'model_not_allowed', param: 'model' });
  });

  it('limits requests per minute with 429 rate_limit_exceeded and Retry-After', async () => {
    const { key } = await f.createKey({ requests_per_minute: 2 });
    await sdk(key).chat.completions.create(ask);
    await sdk(key).chat.completions.create(ask);
    const res = await fetch(`${f.gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify(ask),
    });
    expect(res.status).toBe(429);
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(Number(res.headers.get('retry-after'))).toBeLessThanOrEqual(61);
    expect((await res.json()).error.code).toBe('rate_limit_exceeded');
  });

  it("a minute boundary does not let a second minute's worth through (sliding window, clock set by the test)", async () => {
    const { key } = await f.createKey({ requests_per_minute: 2 });
    const call = () =>
      fetch(`${f.gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify(ask),
      });
    // Only Date is faked: timers and I/O run as usual.
    jest.useFakeTimers({
      doNotFake: [
        'nextTick',
        'setImmediate',
        'clearImmediate',
        'setTimeout',
        'clearTimeout',
        'setInterval',
        'clearInterval',
        'queueMicrotask',
        'hrtime',
        'performance',
      ],
    });
    try {
      const boundary = Math.ceil(Date.now() / 60_000) * 60_000 + 60_000;
      jest.setSystemTime(boundary - 200);
      const before = [(await call()).status, (await call()).status];
      jest.setSystemTime(boundary + 200);
      const after = [(await call()).status, (await call()).status];
      expect([...before, ...after]).toEqual([200, 200, 429, 429]);
    } finally {
      jest.useRealTimers();
    }
  });

  it('refuses an expired key, and applies changes made through PATCH', async () => {
    const created = await f.createKey({ expires_at: new Date(Date.now() + 60_000).toISOString() });
    await expect(sdk(created.key).chat.completions.create(ask)).resolves.toBeTruthy();
    const patched = await f.admin('PATCH', `/admin/keys/${created.id}`, {
      expires_at: new Date(Date.now() - 1000).toISOString(),
      name: 'renamed',
    });
    expect(patched.body).toMatchObject({ name: 'renamed', status: 'expired' });
    const err: any = await sdk(created.key)
      .chat.completions.create(ask)
      .catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.AuthenticationError);
    expect(err.message).toContain('expired');
  });

  it('revocation takes effect on every replica once its key cache entry expires (clock set by the test)', async () => {
    let replica: RunningApp | undefined;
    try {
      replica = await startGateway(
        { AI_PROVIDERS_FILE: f.providersFile, ADMIN_TOKEN, AI_KEY_CACHE_TTL_MS: '500' },
        { dbUrl: f.gw.dbUrl },
      );
      const created = await f.createKey();
      // Both replicas have the key cached as valid.
      await sdk(created.key).chat.completions.create(ask);
      await sdk(created.key, replica.url).chat.completions.create(ask);
      const revoked = await f.admin('DELETE', `/admin/keys/${created.id}`);
      expect(revoked.body.status).toBe('revoked');
      // The replica that revoked it refuses at once; the other one once its entry (500 ms) expired,
      // which the test makes happen by moving the clock (only Date is faked; the replicas run in this
      // process). Asked on a fresh connection: fetch's pooled sockets keep time with Date.
      expect(
        (await fetch(`${f.gw.url}/v1/models`, { headers: { authorization: `Bearer ${created.key}` } })).status,
      ).toBe(401);
      jest.useFakeTimers({
        doNotFake: [
          'nextTick',
          'setImmediate',
          'clearImmediate',
          'setTimeout',
          'clearTimeout',
          'setInterval',
          'clearInterval',
          'queueMicrotask',
          'hrtime',
          'performance',
        ],
      });
      jest.setSystemTime(Date.now() + 500);
      const res = await rawRequest(replica.url, {
        method: 'GET',
        path: '/v1/models',
        headers: { authorization: `Bearer ${created.key}` },
      });
      expect(res.status).toBe(401);
      expect(res.json.error).toMatchObject({ code: 'invalid_api_key', message: 'This API key has been revoked' });
    } finally {
      jest.useRealTimers();
      await replica?.close();
    }
  });

  it('rotates a key: a new secret for the same key (limits and usage kept), the old one refused, one audit row; a revoked key cannot be rotated', async () => {
    const created = (
      await f.admin('POST', '/admin/keys', { name: 'to-rotate', requests_per_minute: 50, budget_yuan: 3 })
    ).body;
    await sdk(created.key).chat.completions.create(ask);
    const rotated = await f.admin('POST', `/admin/keys/${created.id}/rotate`);
    expect(rotated.status).toBe(200);
    expect(rotated.body).toMatchObject({
      id: created.id,
      name: 'to-rotate',
      requests_per_minute: 50,
      budget_yuan: 3,
      status: 'active',
    });
    expect(rotated.body.key).toMatch(/^sk-[A-Za-z0-9_-]{43}$/);
    expect(rotated.body.key).not.toBe(created.key);
    expect(rotated.body.spent_yuan).toBeGreaterThan(0);
    // The replica that rotated it refuses the old secret at once; the new one works.
    expect(
      (
        (await sdk(created.key)
          .chat.completions.create(ask)
          .catch((e) => e)) as { status: number }
      ).status,
    ).toBe(401);
    await expect(sdk(rotated.body.key).chat.completions.create(ask)).resolves.toBeTruthy();
    const rows = await queryRows(
      f.gw.dbUrl,
      `SELECT action, actor_kind, before, after FROM ai_audit_log WHERE target_id = $1 AND action = 'key.rotated'`,
      [created.id],
    );
    expect(rows).toHaveLength(1);
    expect(rows[0].actor_kind).toBe('admin-token');
    expect(JSON.stringify(rows[0])).not.toContain(rotated.body.key.slice(12));
    expect(rows[0].before.prefix).toBe(created.prefix);
    expect(rows[0].after.prefix).toBe(rotated.body.prefix);

    await f.admin('DELETE', `/admin/keys/${created.id}`);
    const refused = await f.admin('POST', `/admin/keys/${created.id}/rotate`);
    expect([refused.status, refused.body.error.code]).toEqual([409, 'key_revoked']);
    expect((await f.admin('POST', '/admin/keys/00000000-0000-4000-8000-000000000000/rotate')).status).toBe(404);
  });

  it('searches keys by a part of the name (typed % and _ match themselves) or the start of the prefix, and by project', async () => {
    const tag = `srch_${Date.now()}`;
    const a = (await f.admin('POST', '/admin/keys', { name: `${tag} alpha 100%` })).body;
    const b = (await f.admin('POST', '/admin/keys', { name: `${tag} beta` })).body;
    const names = async (q: string) =>
      (await f.admin('GET', `/admin/keys?q=${encodeURIComponent(q)}`)).body.data.map((k: any) => k.name).sort();
    expect(await names(tag)).toEqual([`${tag} alpha 100%`, `${tag} beta`]);
    expect(await names(`${tag} alpha 100%`)).toEqual([`${tag} alpha 100%`]);
    expect(await names(`${tag.slice(0, -1)}_`)).toEqual([]); // _ is a character, not a wildcard
    expect(
      (await f.admin('GET', `/admin/keys?q=${encodeURIComponent(b.prefix)}`)).body.data.map((k: any) => k.id),
    ).toEqual([b.id]);
    const project = (await f.admin('POST', '/admin/projects', { name: `${tag}-p` })).body;
    await f.admin('PATCH', `/admin/keys/${a.id}`, { project_id: project.id });
    expect((await f.admin('GET', `/admin/keys?project_id=${project.id}`)).body.data.map((k: any) => k.id)).toEqual([
      a.id,
    ]);
    expect((await f.admin('GET', '/admin/keys?project_id=nope')).status).toBe(400);
    expect((await f.admin('GET', `/admin/keys?q=${'x'.repeat(101)}`)).status).toBe(400);
  });
});
