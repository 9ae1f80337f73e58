import { queryRows } from '../support/database';
import { GatewayFixture, startGatewayFixture } from './gateway-fixture';

describe('AI gateway projects (admin API)', () => {
  let f: GatewayFixture;
  const ask = { model: 'vendor-gpt-4-mini', messages: [{ role: 'user' as const, content: 'hi' }] };
  const chat = (key: string) =>
    fetch(`${f.gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify(ask),
    });
  const limited = {
    requests_per_minute: 600,
    tokens_per_minute: 200000,
    max_concurrent_requests: 20,
    model_limits: { 'vendor-gpt-4': { tokens_per_minute: 20000, max_concurrent_requests: 4 } },
    budget_yuan: 500,
    budget_tokens: 50000000,
    budget_period: 'monthly',
    alert_threshold: 0.8,
  };

  beforeAll(async () => {
    // Keys stay cached for a minute (the most the config allows): a project change reaches a key's next call only if the cache is forgotten.
    f = await startGatewayFixture({ AI_KEY_CACHE_TTL_MS: '60000' });
  });
  afterAll(() => f?.close());

  it('creates a project with limits and answers it with its current budget period and key count', async () => {
    const created = await f.admin('POST', '/admin/projects', { name: 'web', ...limited });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ name: 'web', ...limited, key_count: 0 });
    expect(created.body.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(created.body.budget_usage).toMatchObject({
      period: 'monthly',
      spent_yuan: 0,
      reserved_yuan: 0,
      remaining_yuan: 500,
      spent_tokens: 0,
      remaining_tokens: 50000000,
    });
    // A monthly period starts at local midnight of the 1st in BUDGET_TIMEZONE (Asia/Shanghai: 16:00 UTC the day before).
    expect(created.body.budget_usage.period_start).toMatch(/T16:00:00\.000Z$/);
    expect(Date.parse(created.body.budget_usage.period_end)).toBeGreaterThan(Date.now());

    const plain = await f.admin('POST', '/admin/projects', { name: 'plain' });
    expect(plain.body).toMatchObject({
      requests_per_minute: null,
      budget_yuan: null,
      budget_period: 'lifetime',
      alert_threshold: null,
      budget_usage: null,
      key_count: 0,
    });

    const key = await f.createKey({ project_id: created.body.id });
    expect(key.project_id).toBe(created.body.id);
    expect((await f.admin('GET', `/admin/keys/${key.id}`)).body.project_id).toBe(created.body.id);
    const one = await f.admin('GET', `/admin/projects/${created.body.id}`);
    expect(one.status).toBe(200);
    expect(one.body).toMatchObject({
      id: created.body.id,
      name: 'web',
      key_count: 1,
      budget_usage: { period: 'monthly' },
    });
  });

  it('lists newest first with a name search, limit, offset and total', async () => {
    const suffix = Math.random().toString(36).slice(2, 8);
    const names = [`list-${suffix}-a`, `list-${suffix}-b`, `list-${suffix}-c`];
    for (const name of names) expect((await f.admin('POST', '/admin/projects', { name })).status).toBe(201);
    await f.admin('POST', '/admin/projects', { name: `100%_${suffix}` });

    const all = await f.admin('GET', `/admin/projects?q=LIST-${suffix}`);
    expect(all.status).toBe(200);
    expect(all.body).toMatchObject({ object: 'list', total: 3 });
    expect(all.body.data.map((p: any) => p.name)).toEqual([...names].reverse());
    const page = await f.admin('GET', `/admin/projects?q=list-${suffix}&limit=1&offset=1`);
    expect(page.body.total).toBe(3);
    expect(page.body.data.map((p: any) => p.name)).toEqual([names[1]]);
    // LIKE wildcards in q match themselves.
    expect(
      (await f.admin('GET', `/admin/projects?q=${encodeURIComponent('0%_')}`)).body.data.map((p: any) => p.name),
    ).toEqual([`100%_${suffix}`]);
    expect((await f.admin('GET', `/admin/projects?q=${encodeURIComponent(`1%_${suffix}`)}`)).body.total).toBe(0);
    expect((await f.admin('GET', '/admin/projects')).body.total).toBeGreaterThanOrEqual(4);
  });

  it('changes name and limits; null clears; a change reaches its keys at once on this replica', async () => {
    const project = (await f.admin('POST', '/admin/projects', { name: 'team', ...limited })).body;
    const key = await f.createKey({ project_id: project.id });
    // Cached with the project's limits (600 requests per minute).
    expect((await chat(key.key)).status).toBe(200);

    const patched = await f.admin('PATCH', `/admin/projects/${project.id}`, {
      name: 'team-2',
      requests_per_minute: 2,
      model_limits: null,
      budget_yuan: null,
      budget_tokens: null,
      alert_threshold: null,
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({
      name: 'team-2',
      requests_per_minute: 2,
      tokens_per_minute: 200000,
      model_limits: null,
      budget_yuan: null,
      budget_tokens: null,
      alert_threshold: null,
      budget_usage: null,
      key_count: 1,
    });
    expect(Date.parse(patched.body.updated_at)).toBeGreaterThanOrEqual(Date.parse(project.updated_at));

    // The call before the change counted in the project's window too: one more fits in 2 per minute.
    expect((await chat(key.key)).status).toBe(200);
    const refused = await chat(key.key);
    expect(refused.status).toBe(429);
    const body = await refused.json();
    expect(body.error).toMatchObject({ code: 'rate_limit_exceeded', type: 'requests', param: 'requests_per_minute' });
    expect(body.error.message).toContain('project "team-2"');

    const cleared = await f.admin('PATCH', `/admin/projects/${project.id}`, {
      requests_per_minute: null,
      budget_period: 'daily',
      budget_tokens: 1000,
    });
    expect(cleared.body).toMatchObject({
      requests_per_minute: null,
      budget_period: 'daily',
      budget_tokens: 1000,
      budget_usage: { period: 'daily', remaining_tokens: 1000 },
    });
    // A call reserves its estimate and max output: more than 1000 tokens, so the daily budget refuses it.
    const overBudget = await chat(key.key);
    expect(overBudget.status).toBe(429);
    expect(Number(overBudget.headers.get('retry-after'))).toBeGreaterThan(0);
    expect((await overBudget.json()).error).toMatchObject({
      code: 'insufficient_quota',
      message: expect.stringContaining('daily budget of project "team-2"'),
    });
    // With the budget removed too, nothing of the project limits it (three calls this minute, the old limit was 2).
    expect(
      (await f.admin('PATCH', `/admin/projects/${project.id}`, { budget_tokens: null })).body.budget_usage,
    ).toBeNull();
    expect((await chat(key.key)).status).toBe(200);
  });

  it('refuses bad input with 400 naming the field, and unknown projects with 404', async () => {
    const bad: Array<[unknown, string]> = [
      [{}, 'name'],
      [{ name: '' }, 'name'],
      [{ name: 'x', model_limits: { 'vendor-gpt-4': { tokens_per_minute: 0 } } }, 'model_limits'],
      [{ name: 'x', model_limits: { 'vendor-gpt-4': { tokens_per_hour: 5 } } }, 'model_limits'],
      [{ name: 'x', model_limits: ['vendor-gpt-4'] }, 'model_limits'],
      [{ name: 'x', alert_threshold: 0 }, 'alert_threshold'],
      [{ name: 'x', alert_threshold: 1.5 }, 'alert_threshold'],
      [{ name: 'x', budget_period: 'hourly' }, 'budget_period'],
      [{ name: 'x', budget_yuan: -1 }, 'budget_yuan'],
      [{ name: 'x', tokens_per_minute: 1.5 }, 'tokens_per_minute'],
      [{ name: 'x', scopes: ['chat'] }, 'scopes'],
    ];
    for (const [body, param] of bad) {
      const res = await f.admin('POST', '/admin/projects', body);
      expect({ body, status: res.status, type: res.body.error?.type, param: res.body.error?.param }).toEqual({
        body,
        status: 400,
        type: 'invalid_request_error',
        param,
      });
    }
    const project = (await f.admin('POST', '/admin/projects', { name: 'valid' })).body;
    for (const [body, param] of [
      [{ budget_period: null }, 'budget_period'],
      [{ alert_threshold: 1.5 }, 'alert_threshold'],
      [{ name: null }, 'name'],
    ] as const) {
      const res = await f.admin('PATCH', `/admin/projects/${project.id}`, body);
      expect({ status: res.status, param: res.body.error?.param }).toEqual({ status: 400, param });
    }
    for (const body of [
      { name: 'x', alert_threshold: 0 },
      { name: 'x', budget_period: 'hourly' },
      { name: 'x', model_limits: { m: { max_concurrent_requests: -1 } } },
    ]) {
      expect((await f.admin('POST', '/admin/keys', body)).status).toBe(400);
    }

    const missing = '00000000-0000-4000-8000-000000000000';
    const unknownOnKey = await f.admin('POST', '/admin/keys', { name: 'x', project_id: missing });
    expect(unknownOnKey.status).toBe(404);
    expect(unknownOnKey.body.error).toMatchObject({ code: 'not_found', param: 'project_id' });
    const key = await f.createKey();
    const moved = await f.admin('PATCH', `/admin/keys/${key.id}`, { project_id: missing });
    expect(moved.status).toBe(404);
    expect(moved.body.error.param).toBe('project_id');
    expect((await f.admin('POST', '/admin/keys', { name: 'x', project_id: 'web' })).body.error.param).toBe(
      'project_id',
    );
    // A key's name cannot be removed either (it answered 500 from the NOT NULL column before).
    expect((await f.admin('PATCH', `/admin/keys/${key.id}`, { name: null })).body.error).toMatchObject({
      type: 'invalid_request_error',
      param: 'name',
    });

    for (const [method, body] of [
      ['GET', undefined],
      ['PATCH', { name: 'y' }],
      ['DELETE', undefined],
    ] as const) {
      for (const id of [missing, 'not-a-uuid']) {
        const res = await f.admin(method, `/admin/projects/${id}`, body);
        expect({ method, id, status: res.status, code: res.body.error?.code }).toEqual({
          method,
          id,
          status: 404,
          code: 'not_found',
        });
      }
    }
    expect((await f.admin('GET', '/admin/projects?limit=0')).body.error.param).toBe('limit');
    expect((await f.admin('GET', `/admin/projects?q=${'x'.repeat(101)}`)).body.error.param).toBe('q');
  });

  it('refuses to delete a project while keys that are not revoked belong to it (409); then deletes it and detaches revoked keys', async () => {
    const project = (await f.admin('POST', '/admin/projects', { name: 'doomed', budget_yuan: 5 })).body;
    const a = await f.createKey({ project_id: project.id });
    const b = await f.createKey({ project_id: project.id, expires_at: new Date(Date.now() + 60_000).toISOString() });

    const refused = await f.admin('DELETE', `/admin/projects/${project.id}`);
    expect(refused.status).toBe(409);
    expect(refused.body.error).toMatchObject({ type: 'invalid_request_error', code: 'project_has_keys' });
    expect(refused.body.error.message).toContain('2 key(s)');

    await f.admin('DELETE', `/admin/keys/${a.id}`);
    expect((await f.admin('GET', `/admin/projects/${project.id}`)).body.key_count).toBe(1);
    expect((await f.admin('DELETE', `/admin/projects/${project.id}`)).status).toBe(409);
    // Moving the last key out frees the project.
    expect((await f.admin('PATCH', `/admin/keys/${b.id}`, { project_id: null })).body.project_id).toBeNull();

    const deleted = await f.admin('DELETE', `/admin/projects/${project.id}`);
    expect(deleted.status).toBe(200);
    expect(deleted.body).toEqual({ id: project.id, object: 'project', deleted: true });
    expect((await f.admin('GET', `/admin/projects/${project.id}`)).status).toBe(404);
    const revoked = await f.admin('GET', `/admin/keys/${a.id}`);
    expect(revoked.body).toMatchObject({ status: 'revoked', project_id: null });
    expect(
      await queryRows(f.gw.dbUrl, 'SELECT count(*)::int AS n FROM ai_projects WHERE id = $1', [project.id]),
    ).toEqual([{ n: 0 }]);
    expect((await f.admin('DELETE', `/admin/projects/${project.id}`)).status).toBe(404);
  });

  it('is for the admin token only', async () => {
    const { key } = await f.createKey();
    for (const auth of [undefined, 'Bearer wrong-token-wrong-token', `Bearer ${key}`]) {
      const res = await fetch(`${f.gw.url}/admin/projects`, { headers: auth ? { authorization: auth } : {} });
      expect(res.status).toBe(401);
      expect((await res.json()).error).toHaveProperty('message');
    }
  });
});
