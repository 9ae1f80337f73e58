import { FakeClock } from '../support/clock';
import { queryRows } from '../support/database';
import { GatewayFixture, startGatewayFixture } from './gateway-fixture';

// The admin read APIs the console draws from: a key's calls, usage per hour × model/endpoint, upstream health.
// The gateway's clock stands still at T (far from the real time, so the ledger rows of real calls, stamped with
// the real time, stay out of the last-hour window the test writes its own rows into).
const T = Date.parse('2030-01-15T12:00:00.000Z');
const at = (msBeforeT: number) => new Date(T - msBeforeT).toISOString();

describe('AI gateway admin read APIs for the console', () => {
  let f: GatewayFixture;
  const clock = new FakeClock(T);
  const get = async (path: string) => f.admin('GET', path);
  const ledger = (row: {
    keyId?: string | null;
    endpoint?: string;
    model?: string;
    provider?: string | null;
    status?: string;
    http?: number | null;
    latency?: number;
    cost?: number;
    tokens?: number;
    at: string;
    requestId?: string;
  }) =>
    queryRows(
      f.gw.dbUrl,
      `INSERT INTO ai_usage_records (key_id, endpoint, model, provider, status, http_status, latency_ms, cost_yuan, prompt_tokens, completion_tokens, request_id, created_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9, $10, $11)`,
      [
        row.keyId ?? null,
        row.endpoint ?? 'chat.completions',
        row.model ?? 'vendor-gpt-4',
        row.provider === undefined ? 'primary' : row.provider,
        row.status ?? 'ok',
        row.http === undefined ? 200 : row.http,
        row.latency ?? 100,
        row.cost ?? 0,
        row.tokens ?? 0,
        row.requestId ?? null,
        row.at,
      ],
    );

  beforeAll(async () => {
    f = await startGatewayFixture({ BUDGET_TIMEZONE: 'Asia/Shanghai' }, undefined, { clock });
  });
  afterAll(() => f?.close());

  describe('GET /admin/keys/{id}/calls', () => {
    it("pages a key's calls newest first with a cursor, ties on time broken by id, a real call first", async () => {
      const key = await f.createKey({ name: 'calls' });
      const other = await f.createKey({ name: 'other' });
      // Two calls in the same microsecond: the cursor must neither skip nor repeat one of them.
      await ledger({ keyId: key.id, at: '2026-01-01T00:00:01.000001Z', requestId: 'r1' });
      await ledger({ keyId: key.id, at: '2026-01-01T00:00:02.000001Z', requestId: 'r2' });
      await ledger({ keyId: key.id, at: '2026-01-01T00:00:02.000001Z', requestId: 'r3' });
      await ledger({
        keyId: key.id,
        at: '2026-01-01T00:00:02.000002Z',
        requestId: 'r4',
        status: 'failed',
        http: 502,
        provider: 'primary',
      });
      await ledger({ keyId: other.id, at: '2026-01-01T00:00:03Z', requestId: 'not-mine' });
      const res = await fetch(`${f.gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${key.key}`,
          'content-type': 'application/json',
          'x-request-id': 'real-call-1',
        },
        body: JSON.stringify({ model: 'vendor-gpt-4', messages: [{ role: 'user', content: 'hi' }] }),
      });
      expect(res.status).toBe(200);

      const seen: any[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const page = await get(`/admin/keys/${key.id}/calls?limit=2${cursor ? `&cursor=${cursor}` : ''}`);
        expect(page.status).toBe(200);
        expect(page.body.object).toBe('list');
        expect(page.body.data.length).toBeLessThanOrEqual(2);
        seen.push(...page.body.data);
        cursor = page.body.next_cursor;
        pages += 1;
      } while (cursor && pages < 10);
      expect(seen.map((c) => c.request_id)).toEqual(['real-call-1', 'r4', 'r3', 'r2', 'r1']);
      expect(pages).toBe(3);
      expect(seen[0]).toMatchObject({
        endpoint: 'chat.completions',
        model: 'vendor-gpt-4',
        provider: 'primary',
        status: 'ok',
        http_status: 200,
        error: null,
      });
      expect(seen[0].prompt_tokens).toBeGreaterThan(0);
      expect(seen[0].cost_yuan).toBeGreaterThan(0);
      expect(typeof seen[0].latency_ms).toBe('number');
      expect(seen[1]).toMatchObject({ status: 'failed', http_status: 502, created_at: '2026-01-01T00:00:02.000Z' });
      expect(Object.keys(seen[0]).sort()).toEqual([
        'completion_tokens',
        'cost_yuan',
        'created_at',
        'endpoint',
        'error',
        'http_status',
        'id',
        'latency_ms',
        'model',
        'prompt_tokens',
        'provider',
        'request_id',
        'status',
      ]);
    });

    it('answers 404 for an unknown or malformed key id and 400 naming a bad limit or cursor', async () => {
      const key = await f.createKey({ name: 'bad-input' });
      expect((await get('/admin/keys/00000000-0000-4000-8000-000000000000/calls')).status).toBe(404);
      expect((await get('/admin/keys/not-a-key/calls')).status).toBe(404);
      for (const [query, param] of [
        ['limit=0', 'limit'],
        ['limit=201', 'limit'],
        ['limit=x', 'limit'],
        ['cursor=abc', 'cursor'],
        [`cursor=${Buffer.from(JSON.stringify({ at: 'yesterday', id: '1' })).toString('base64url')}`, 'cursor'],
      ]) {
        const res = await get(`/admin/keys/${key.id}/calls?${query}`);
        expect({ query, status: res.status, param: res.body.error?.param, type: res.body.error?.type }).toEqual({
          query,
          status: 400,
          param,
          type: 'invalid_request_error',
        });
      }
      const anonymous = await fetch(`${f.gw.url}/admin/keys/${key.id}/calls`);
      expect(anonymous.status).toBe(401);
    });
  });

  describe('GET /admin/usage per hour and per model or endpoint', () => {
    it('buckets per hour of BUDGET_TIMEZONE and sums over keys per model or per endpoint', async () => {
      const a = await f.createKey({ name: 'usage-a' });
      const b = await f.createKey({ name: 'usage-b' });
      // 2027-05-01T01:10Z = 09:10 Shanghai; 01:50Z = 09:50; 02:05Z = 10:05.
      await ledger({ keyId: a.id, at: '2027-05-01T01:10:00Z', model: 'vendor-gpt-4', cost: 1, tokens: 10 });
      await ledger({ keyId: b.id, at: '2027-05-01T01:50:00Z', model: 'vendor-gpt-4', cost: 2, tokens: 20 });
      await ledger({ keyId: a.id, at: '2027-05-01T02:05:00Z', model: 'vendor-gpt-4-mini', cost: 4, tokens: 40 });
      await ledger({
        keyId: b.id,
        at: '2027-05-01T02:06:00Z',
        endpoint: 'embeddings',
        model: 'text-embedding-v3',
        cost: 8,
        tokens: 80,
      });
      const range = 'start_date=2027-05-01&end_date=2027-05-01&period=hour';

      const perModel = (await get(`/admin/usage?${range}&group_by=model`)).body;
      expect(perModel).toMatchObject({
        period: 'hour',
        group_by: 'model',
        time_zone: 'Asia/Shanghai',
        total_cost_yuan: 15,
      });
      expect(
        perModel.data.map((l: any) => [l.date, l.key_id, l.project_id, l.endpoint, l.model, l.requests, l.cost_yuan]),
      ).toEqual([
        ['2027-05-01T09:00', null, null, null, 'vendor-gpt-4', 2, 3],
        ['2027-05-01T10:00', null, null, null, 'text-embedding-v3', 1, 8],
        ['2027-05-01T10:00', null, null, null, 'vendor-gpt-4-mini', 1, 4],
      ]);
      expect(perModel.totals.map((t: any) => [t.date, t.requests, t.cost_yuan])).toEqual([
        ['2027-05-01T09:00', 2, 3],
        ['2027-05-01T10:00', 2, 12],
      ]);

      const perEndpoint = (await get(`/admin/usage?${range}&group_by=endpoint`)).body;
      expect(perEndpoint.data.map((l: any) => [l.date, l.endpoint, l.model, l.requests, l.cost_yuan])).toEqual([
        ['2027-05-01T09:00', 'chat.completions', null, 2, 3],
        ['2027-05-01T10:00', 'chat.completions', null, 1, 4],
        ['2027-05-01T10:00', 'embeddings', null, 1, 8],
      ]);

      const perDayOfOneKey = (
        await get(`/admin/usage?start_date=2027-05-01&end_date=2027-05-01&period=day&group_by=model&key_id=${a.id}`)
      ).body;
      expect(perDayOfOneKey.data.map((l: any) => [l.date, l.model, l.cost_yuan])).toEqual([
        ['2027-05-01', 'vendor-gpt-4', 1],
        ['2027-05-01', 'vendor-gpt-4-mini', 4],
      ]);
      // The default stays per key, as before.
      const perKey = (await get(`/admin/usage?${range}`)).body;
      expect(perKey.group_by).toBe('key');
      expect(perKey.data.map((l: any) => [l.date, l.key_id, l.model])).toEqual(
        [
          ['2027-05-01T09:00', a.id, 'vendor-gpt-4'],
          ['2027-05-01T09:00', b.id, 'vendor-gpt-4'],
          ['2027-05-01T10:00', a.id, 'vendor-gpt-4-mini'],
          ['2027-05-01T10:00', b.id, 'text-embedding-v3'],
        ].sort((x, y) => x[0].localeCompare(y[0]) || x[1].localeCompare(y[1])),
      );
    });

    it('bounds an hourly range to 31 days and refuses an unknown group_by; /v1/usage has no hours', async () => {
      expect((await get('/admin/usage?start_date=2027-05-01&end_date=2027-05-31&period=hour')).status).toBe(200);
      const long = await get('/admin/usage?start_date=2027-05-01&end_date=2027-06-01&period=hour');
      expect({ status: long.status, param: long.body.error?.param, message: long.body.error?.message }).toEqual({
        status: 400,
        param: 'start_date',
        message: 'at most 31 days per query',
      });
      expect((await get('/admin/usage?start_date=2027-05-01&end_date=2027-06-01&period=day')).status).toBe(200);
      const team = await get('/admin/usage?group_by=team');
      expect({ status: team.status, param: team.body.error?.param }).toEqual({ status: 400, param: 'group_by' });
      const key = await f.createKey({ name: 'own-usage' });
      const own = await fetch(`${f.gw.url}/v1/usage?period=hour`, { headers: { authorization: `Bearer ${key.key}` } });
      expect(own.status).toBe(400);
      expect((await own.json()).error.param).toBe('period');
    });
  });

  describe('GET /admin/usage in pages', () => {
    const range = 'start_date=2027-03-01&end_date=2027-03-04';
    const full: Record<string, any> = {};

    beforeAll(async () => {
      const project = (await f.admin('POST', '/admin/projects', { name: 'paged' })).body;
      const keys = [
        await f.createKey({ name: 'paged-a', project_id: project.id }),
        await f.createKey({ name: 'paged-b', project_id: project.id }),
        await f.createKey({ name: 'paged-c' }),
      ];
      let cost = 0;
      for (const day of ['01', '02', '03', '04'])
        for (const key of [...keys, null])
          for (const model of ['vendor-gpt-4', 'vendor-gpt-4-mini'])
            // A call without a key (none today, but the ledger allows it) on one day only: a line with key_id null.
            if (key || (day === '02' && model === 'vendor-gpt-4'))
              await ledger({ keyId: key?.id ?? null, model, at: `2027-03-${day}T06:00:00Z`, cost: ++cost, tokens: 1 });
      for (const groupBy of ['key', 'project', 'model', 'endpoint'])
        full[groupBy] = (await get(`/admin/usage?${range}&group_by=${groupBy}`)).body;
    });

    it('answers a small report whole, as before: every line and no next page', () => {
      expect(full.key.data).toHaveLength(4 * 3 * 2 + 1);
      // Per project: the project's keys, and the keys without one (the keyless call with them).
      expect(full.project.data).toHaveLength(4 * 2 * 2);
      expect(full.model.data).toHaveLength(4 * 2);
      expect(full.key.next_cursor).toBeNull();
      expect(full.key.total_cost_yuan).toBe((25 * 26) / 2);
    });

    it.each(['key', 'project', 'model', 'endpoint'])(
      'group_by=%s: pages of at most `limit` lines have every line once, in order, and the whole report totals',
      async (groupBy) => {
        for (const limit of [1, 3, 7]) {
          const lines: unknown[] = [];
          let cursor: string | null = null;
          let pages = 0;
          do {
            const page: any = (
              await get(`/admin/usage?${range}&group_by=${groupBy}&limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`)
            ).body;
            expect(page.data.length).toBeLessThanOrEqual(limit);
            expect([page.totals, page.total_cost_yuan]).toEqual([full[groupBy].totals, full[groupBy].total_cost_yuan]);
            lines.push(...page.data);
            cursor = page.next_cursor;
            pages++;
          } while (cursor && pages <= 100);
          expect(lines).toEqual(full[groupBy].data);
          expect(pages).toBe(Math.max(1, Math.ceil(full[groupBy].data.length / limit)));
        }
      },
    );

    it('refuses a limit out of 1..5000 and a cursor it did not give out, with 400 and the parameter', async () => {
      const nul = Buffer.from(JSON.stringify(['2027-03-01', null, null, 'chat\u0000', null])).toString('base64url');
      const cases: Array<[string, string]> = [
        ['limit=0', 'limit'],
        ['limit=5001', 'limit'],
        ['limit=1.5', 'limit'],
        ['limit=many', 'limit'],
        ['cursor=not-a-cursor', 'cursor'],
        [`cursor=${Buffer.from('{"date":"2027-03-01"}').toString('base64url')}`, 'cursor'],
        [`cursor=${nul}`, 'cursor'],
      ];
      for (const [query, param] of cases) {
        const res = await get(`/admin/usage?${range}&${query}`);
        expect([query, res.status, res.body.error?.type, res.body.error?.param]).toEqual([
          query,
          400,
          'invalid_request_error',
          param,
        ]);
      }
      expect((await get(`/admin/usage?${range}&limit=5000`)).body.data).toEqual(full.key.data);
    });
  });

  describe('GET /admin/upstreams', () => {
    it("lists the providers file deployments with the last hour error rate and latency from the ledger, and this replica's cooldowns", async () => {
      // In the window [T-1h, T]: primary answered 100, 200, 300 ms, failed once with a 502 (400 ms) and once
      // with a 400 the request earned (50 ms, not an upstream error); a cached answer reached no deployment.
      await ledger({ at: at(59 * 60_000), latency: 100 });
      await ledger({ at: at(30 * 60_000), latency: 200 });
      await ledger({ at: at(1_000), latency: 300 });
      await ledger({ at: at(2_000), latency: 400, status: 'failed', http: 502 });
      await ledger({ at: at(3_000), latency: 50, status: 'failed', http: 400 });
      await ledger({ at: at(4_000), latency: 1, status: 'cached', provider: null });
      // The fallback deployment answered once (1000 ms).
      await ledger({ at: at(5_000), latency: 1_000, provider: 'backup' });
      // Outside the window: a slow failure of an hour and a minute ago.
      await ledger({ at: at(61 * 60_000), latency: 9_999, status: 'failed', http: 500 });

      const r = (await get('/admin/upstreams')).body;
      expect(r).toMatchObject({
        object: 'list',
        window_start: new Date(T - 3_600_000).toISOString(),
        window_end: new Date(T).toISOString(),
      });
      expect(typeof r.replica).toBe('string');
      expect(r.data.map((d: any) => [d.name, d.type, d.weight])).toEqual([
        ['primary', 'openai', 1],
        ['backup', 'openai', 0],
        ['claude', 'anthropic', 1],
      ]);
      const primary = r.data[0];
      expect(primary.models).toEqual([
        'vendor-gpt-4',
        'vendor-gpt-4-mini',
        'text-embedding-v3',
        'text-embedding-v3-small',
      ]);
      expect(primary.last_hour).toEqual({
        requests: 5,
        errors: 1,
        error_rate: 0.2,
        latency_p50_ms: 200,
        latency_p95_ms: 380,
      });
      expect(primary.cooldown).toEqual({ cooling_down: false, until: null });
      expect(r.data[2].last_hour).toEqual({
        requests: 0,
        errors: 0,
        error_rate: null,
        latency_p50_ms: null,
        latency_p95_ms: null,
      });
      // All deployments together: 50, 100, 200, 300, 400, 1000 ms.
      expect(r.overall).toEqual({
        requests: 6,
        errors: 1,
        error_rate: 0.1667,
        latency_p50_ms: 250,
        latency_p95_ms: 850,
      });
    });

    it('shows a deployment cooling down after it failed, until the cooldown ends', async () => {
      f.openai.behaviour.failTimes = 100;
      // One key's failures cool the deployment for that key alone; a second key's make it everyone's.
      for (const name of ['cooldown', 'cooldown-2']) {
        const key = await f.createKey({ name });
        const res = await fetch(`${f.gw.url}/v1/chat/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key.key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'vendor-gpt-4', messages: [{ role: 'user', content: 'hi' }] }),
        });
        expect(res.status).toBe(502);
        if (name === 'cooldown')
          expect((await get('/admin/upstreams')).body.data[0].cooldown).toEqual({ cooling_down: false, until: null });
      }
      f.openai.behaviour.failTimes = 0;
      const cooling = (await get('/admin/upstreams')).body.data[0];
      // The fixture's providers file cools a deployment down for 200 ms of the gateway's clock.
      expect(cooling.cooldown).toEqual({ cooling_down: true, until: new Date(T + 200).toISOString() });
      clock.advance(201);
      expect((await get('/admin/upstreams')).body.data[0].cooldown).toEqual({ cooling_down: false, until: null });
    });

    it("keys of one project are one caller: their failures cool the deployment for the project alone, another key's make it everyone's", async () => {
      const project = (await f.admin('POST', '/admin/projects', { name: 'one-tenant' })).body;
      const chatWith = async (key: string) =>
        (
          await fetch(`${f.gw.url}/v1/chat/completions`, {
            method: 'POST',
            headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
            body: JSON.stringify({ model: 'vendor-gpt-4', messages: [{ role: 'user', content: 'hi' }] }),
          })
        ).status;
      f.openai.behaviour.failTimes = 100;
      for (const name of ['tenant-a', 'tenant-b']) {
        const key = await f.createKey({ name, project_id: project.id });
        expect(await chatWith(key.key)).toBe(502);
        expect((await get('/admin/upstreams')).body.data[0].cooldown).toEqual({ cooling_down: false, until: null });
      }
      // A key outside the project is another caller: its failure within the project's cooldown makes it everyone's.
      expect(await chatWith((await f.createKey({ name: 'outsider' })).key)).toBe(502);
      f.openai.behaviour.failTimes = 0;
      expect((await get('/admin/upstreams')).body.data[0].cooldown).toEqual({
        cooling_down: true,
        until: new Date(clock.now() + 200).toISOString(),
      });
      clock.advance(201);
      expect((await get('/admin/upstreams')).body.data[0].cooldown).toEqual({ cooling_down: false, until: null });
    });
  });
});
