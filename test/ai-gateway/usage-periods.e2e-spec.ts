import { queryRows } from '../support/database';
import { GatewayFixture, startGatewayFixture } from './gateway-fixture';

// Ledger rows at chosen instants around a Shanghai (UTC+8) midnight that is a Sunday/Monday and a month's
// first day, written into the ledger so the hourly totals come from its trigger as in production.
//   2026-02-28T17:00Z = Sun 2026-03-01 01:00 Shanghai   (UTC day 02-28, UTC month 02)
//   2026-03-01T15:30Z = Sun 2026-03-01 23:30 Shanghai   (UTC day 03-01)
//   2026-03-01T16:30Z = Mon 2026-03-02 00:30 Shanghai   (UTC day 03-01; a new Shanghai week)
describe('AI gateway usage per period, key and project', () => {
  let f: GatewayFixture;
  let project: { id: string };
  let a: { id: string; key: string };
  let b: { id: string; key: string };
  let c: { id: string; key: string };
  const admin = async (query: string) => (await f.admin('GET', `/admin/usage?${query}`)).body;
  const mine = async (key: string, query: string) =>
    (await fetch(`${f.gw.url}/v1/usage?${query}`, { headers: { authorization: `Bearer ${key}` } })).json();
  const ledger = (keyId: string, at: string, cost: number, tokens: number) =>
    queryRows(
      f.gw.dbUrl,
      `INSERT INTO ai_usage_records (key_id, endpoint, model, status, cost_yuan, prompt_tokens, completion_tokens, created_at) VALUES ($1, 'chat.completions', 'vendor-gpt-4', 'ok', $2, $3, $3, $4)`,
      [keyId, cost, tokens, at],
    );
  const byDate = (lines: Array<{ date: string; cost_yuan: number }>) =>
    Object.fromEntries(lines.map((l) => [l.date, l.cost_yuan]));

  beforeAll(async () => {
    f = await startGatewayFixture({ BUDGET_TIMEZONE: 'Asia/Shanghai' });
    project = (await f.admin('POST', '/admin/projects', { name: 'web' })).body;
    a = await f.createKey({ name: 'a', project_id: project.id, budget_yuan: 100, budget_period: 'monthly' });
    b = await f.createKey({ name: 'b', project_id: project.id });
    c = await f.createKey({ name: 'c' });
    await ledger(a.id, '2026-02-28T17:00:00Z', 1, 10);
    await ledger(a.id, '2026-03-01T15:30:00Z', 2, 20);
    await ledger(a.id, '2026-03-01T16:30:00Z', 4, 40);
    await ledger(b.id, '2026-03-01T15:30:00Z', 8, 80);
    await ledger(c.id, '2026-03-01T15:30:00Z', 16, 160);
  });
  afterAll(() => f?.close());

  it('keeps UTC days without a period (the answer as before, plus project_id and totals)', async () => {
    const r = await admin(`start_date=2026-02-28&end_date=2026-03-02&key_id=${a.id}`);
    expect(r).toMatchObject({ period: null, time_zone: 'UTC', total_cost_yuan: 7 });
    expect(r.data.map((l: any) => [l.date, l.key_id, l.project_id, l.cost_yuan, l.requests])).toEqual([
      ['2026-02-28', a.id, project.id, 1, 1],
      ['2026-03-01', a.id, project.id, 6, 2],
    ]);
    expect(r.totals).toEqual([
      { date: '2026-02-28', requests: 1, prompt_tokens: 10, completion_tokens: 10, cost_yuan: 1 },
      { date: '2026-03-01', requests: 2, prompt_tokens: 60, completion_tokens: 60, cost_yuan: 6 },
    ]);
  });

  it('buckets per day, week (from Monday) and month in BUDGET_TIMEZONE', async () => {
    const day = await admin(`start_date=2026-02-28&end_date=2026-03-02&key_id=${a.id}&period=day`);
    expect(day).toMatchObject({ period: 'day', time_zone: 'Asia/Shanghai' });
    expect(byDate(day.data)).toEqual({ '2026-03-01': 3, '2026-03-02': 4 });
    const week = await admin(`start_date=2026-02-28&end_date=2026-03-02&key_id=${a.id}&period=week`);
    expect(byDate(week.data)).toEqual({ '2026-02-23': 3, '2026-03-02': 4 });
    // The range is Shanghai days too: March from its local midnight holds the call at 02-28T17:00Z, which a
    // UTC March leaves out.
    const month = await admin(`start_date=2026-03-01&end_date=2026-03-31&key_id=${a.id}&period=month`);
    expect(month.data.map((l: any) => [l.date, l.cost_yuan, l.requests, l.prompt_tokens])).toEqual([
      ['2026-03-01', 7, 3, 70],
    ]);
    expect((await admin(`start_date=2026-03-01&end_date=2026-03-31&key_id=${a.id}`)).total_cost_yuan).toBe(6);
    const feb = await admin(`start_date=2026-02-01&end_date=2026-02-28&key_id=${a.id}&period=month`);
    expect(feb.data).toEqual([]);
  });

  it('filters by project and sums per project', async () => {
    const all = await admin('start_date=2026-03-01&end_date=2026-03-01&period=day');
    expect(all.data.map((l: any) => [l.key_id, l.project_id, l.cost_yuan])).toEqual(
      [
        [a.id, project.id, 3],
        [b.id, project.id, 8],
        [c.id, null, 16],
      ].sort((x, y) => String(x[0]).localeCompare(String(y[0]))),
    );
    const inProject = await admin(`start_date=2026-03-01&end_date=2026-03-01&period=day&project_id=${project.id}`);
    expect(inProject.data.map((l: any) => l.key_id).sort()).toEqual([a.id, b.id].sort());
    expect(inProject.total_cost_yuan).toBe(11);
    const perProject = await admin('start_date=2026-02-28&end_date=2026-03-02&period=month&group_by=project');
    expect(perProject.data.map((l: any) => [l.date, l.key_id, l.project_id, l.cost_yuan, l.requests])).toEqual([
      ['2026-03-01', null, project.id, 15, 4],
      ['2026-03-01', null, null, 16, 1],
    ]);
    expect(perProject.totals).toEqual([
      { date: '2026-03-01', requests: 5, prompt_tokens: 310, completion_tokens: 310, cost_yuan: 31 },
    ]);
    const one = await admin(
      `start_date=2026-02-28&end_date=2026-03-02&period=week&group_by=project&project_id=${project.id}`,
    );
    expect(one.data.map((l: any) => [l.date, l.project_id, l.cost_yuan])).toEqual([
      ['2026-02-23', project.id, 11],
      ['2026-03-02', project.id, 4],
    ]);
  });

  it("answers a key's own usage per period with its project and current budget period", async () => {
    const r = await mine(a.key, 'start_date=2026-02-28&end_date=2026-03-02&period=week');
    expect(r).toMatchObject({ object: 'usage', period: 'week', time_zone: 'Asia/Shanghai', total_cost_yuan: 7 });
    expect(r.key).toMatchObject({
      id: a.id,
      project_id: project.id,
      budget_yuan: 100,
      budget_period: 'monthly',
      budget_usage: { period: 'monthly', remaining_yuan: 100 },
    });
    expect(byDate(r.data)).toEqual({ '2026-02-23': 3, '2026-03-02': 4 });
    expect(r.data[0]).not.toHaveProperty('key_id');
    // Only its own: b's call in the same hour is not in a's report.
    expect((await mine(b.key, 'start_date=2026-02-28&end_date=2026-03-02&period=month')).total_cost_yuan).toBe(8);
  });

  it("counts a real call under the key's project, today in BUDGET_TIMEZONE", async () => {
    const res = await fetch(`${f.gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${b.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'vendor-gpt-4', messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(res.status).toBe(200);
    const shanghaiToday = () => new Intl.DateTimeFormat('en-CA', { timeZone: 'Asia/Shanghai' }).format(Date.now());
    const before = shanghaiToday();
    const r = await admin(`period=day&group_by=project&project_id=${project.id}`);
    // Read on both sides of the request: a Shanghai midnight between them cannot make this fail.
    expect([before, shanghaiToday()]).toContain(r.end_date);
    const monthAgo = new Intl.DateTimeFormat('en-CA', { timeZone: 'Asia/Shanghai' }).format(
      Date.now() - 30 * 86_400_000,
    );
    const wide = await admin(`start_date=${monthAgo}&period=month&group_by=project&project_id=${project.id}`);
    expect(wide.data).toEqual([expect.objectContaining({ key_id: null, project_id: project.id, requests: 1 })]);
    expect(wide.data[0].cost_yuan).toBeGreaterThan(0);
  });

  it('refuses bad period, group_by and project_id with 400 naming the parameter', async () => {
    for (const [query, param] of [
      ['period=daily', 'period'],
      ['group_by=team', 'group_by'],
      ['project_id=web', 'project_id'],
    ]) {
      const res = await f.admin('GET', `/admin/usage?${query}`);
      expect({ query, status: res.status, param: res.body.error?.param }).toEqual({ query, status: 400, param });
    }
    const res = await fetch(`${f.gw.url}/v1/usage?period=year`, { headers: { authorization: `Bearer ${a.key}` } });
    expect(res.status).toBe(400);
    expect((await res.json()).error.param).toBe('period');
    expect((await admin('start_date=2025-01-01&end_date=2026-03-02&period=month')).error.param).toBe('start_date');
  });
});
