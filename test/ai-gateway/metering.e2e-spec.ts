import { randomUUID } from 'crypto';
import { getEncoding } from 'js-tiktoken';
import OpenAI from 'openai';
import { startGateway } from '../support/apps';
import { ExpiredHoldsSweeper } from '../../apps/ai-gateway/src/limits/expired-holds.sweeper';
import { ADMIN_TOKEN, GatewayFixture, startGatewayFixture } from './gateway-fixture';
import { queryRows as query } from '../support/database';

describe('AI gateway metering: budgets, ledger, usage', () => {
  let f: GatewayFixture;
  const sdk = (key: string) => new OpenAI({ apiKey: key, baseURL: `${f.gw.url}/v1`, maxRetries: 0 });

  beforeAll(async () => {
    f = await startGatewayFixture({ AI_COMPLETION_RESERVE_TOKENS: '50' });
  });
  afterAll(() => f?.close());
  beforeEach(() => {
    f.openai.reset();
    f.openai.behaviour.apiKey = 'sk-upstream-openai';
  });

  it('never lets concurrent calls spend more than a small budget', async () => {
    // Each call: 50 completion tokens at 2 yuan/1k = 0.1 yuan, plus a few prompt tokens.
    f.openai.behaviour.reply = 'w '.repeat(50).trim();
    f.openai.behaviour.delayMs = 50;
    const budget = 1;
    const { id, key } = await f.createKey({ name: 'race', budget_yuan: budget });
    const client = sdk(key);
    const results = await Promise.all(
      Array.from({ length: 40 }, () =>
        client.chat.completions
          .create({ model: 'vendor-gpt-4', max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] })
          .then(
            () => 'ok',
            (e) =>
              e.status === 429 && e.error?.code === 'insufficient_quota' ? 'quota' : `other ${e.status} ${e.message}`,
          ),
      ),
    );
    const ok = results.filter((r) => r === 'ok').length;
    expect(results.filter((r) => r !== 'ok' && r !== 'quota')).toEqual([]);
    expect(ok).toBeGreaterThanOrEqual(5);
    expect(results.filter((r) => r === 'quota').length).toBeGreaterThan(0);
    const key1 = (await f.admin('GET', `/admin/keys/${id}`)).body;
    expect(key1.spent_yuan).toBeLessThanOrEqual(budget);
    expect(key1.reserved_yuan).toBe(0);
    expect(key1.spent_yuan).toBeCloseTo(ok * (0.1 + 0.002), 6);
    // The burst was refused while holds (worst case: 25 prompt + 50 completion tokens = 0.125 yuan)
    // covered the budget; what settling gave back is still usable, one call after another.
    const call = () =>
      fetch(`${f.gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'vendor-gpt-4', max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] }),
      });
    let later = 0;
    let refused = await call();
    while (refused.status === 200 && later < 20) {
      later++;
      refused = await call();
    }
    const key2 = (await f.admin('GET', `/admin/keys/${id}`)).body;
    expect(key2.spent_yuan).toBeLessThanOrEqual(budget);
    expect(key2.spent_yuan).toBeCloseTo((ok + later) * (0.1 + 0.002), 6);
    // Spent more or less all of it: what is left cannot cover one more call's hold.
    expect(key2.remaining_yuan).toBeLessThan(0.125);
    expect(refused.status).toBe(429);
    expect(refused.headers.get('x-should-retry')).toBe('false');
    expect((await refused.json()).error).toMatchObject({ type: 'insufficient_quota', code: 'insufficient_quota' });
    const usage = await (await fetch(`${f.gw.url}/v1/usage`, { headers: { authorization: `Bearer ${key}` } })).json();
    expect(usage.total_cost_yuan).toBeCloseTo(key2.spent_yuan, 8);
    expect(usage.data[0]).toMatchObject({
      endpoint: 'chat.completions',
      model: 'vendor-gpt-4',
      requests: ok + later,
      failed: 0,
      prompt_tokens: (ok + later) * 2,
      completion_tokens: (ok + later) * 50,
    });
  });

  it('releases budget held by calls that never settled (a killed process) once the hold expires', async () => {
    const { id, key } = await f.createKey({ budget_yuan: 1 });
    await sdk(key).chat.completions.create({
      model: 'vendor-gpt-4',
      max_tokens: 5,
      messages: [{ role: 'user', content: 'hi' }],
    });
    // Settled calls leave no hold behind.
    expect(
      await query(f.gw.dbUrl, `SELECT count(*)::int AS n FROM ai_limit_holds WHERE budgets @> $1::jsonb`, [
        JSON.stringify([{ subject: `k:${id}` }]),
      ]),
    ).toEqual([{ n: 0 }]);
    // What a process killed mid-call leaves: a hold and the reserved amount.
    const held = [{ subject: `k:${id}`, period_start: 0, yuan: '0.9', tokens: 0 }];
    await query(
      f.gw.dbUrl,
      `INSERT INTO ai_limit_holds (id, budgets, expires_at) VALUES (gen_random_uuid(), $1::jsonb, now() - interval '1 second')`,
      [JSON.stringify(held)],
    );
    await query(
      f.gw.dbUrl,
      `UPDATE ai_budget_usage SET reserved_yuan = reserved_yuan + 0.9 WHERE subject = $1 AND period_start = to_timestamp(0)`,
      [`k:${id}`],
    );
    const blocked: any = await sdk(key)
      .chat.completions.create({ model: 'vendor-gpt-4', max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] })
      .catch((e) => e);
    expect(blocked.error?.code).toBe('insufficient_quota');
    expect(await f.gw.app.get(ExpiredHoldsSweeper).sweep()).toBe(1);
    expect((await f.admin('GET', `/admin/keys/${id}`)).body.reserved_yuan).toBe(0);
    await expect(
      sdk(key).chat.completions.create({
        model: 'vendor-gpt-4',
        max_tokens: 50,
        messages: [{ role: 'user', content: 'hi' }],
      }),
    ).resolves.toBeTruthy();
  });

  it('caps max_tokens of a key that sent none, at what was reserved (budgeted or not)', async () => {
    const { key } = await f.createKey({ budget_yuan: 5 });
    await sdk(key).chat.completions.create({ model: 'vendor-gpt-4', messages: [{ role: 'user', content: 'hi' }] });
    expect(f.openai.requests[0].body.max_tokens).toBe(50);
    const { key: unlimited } = await f.createKey();
    await sdk(unlimited).chat.completions.create({
      model: 'vendor-gpt-4',
      messages: [{ role: 'user', content: 'hi' }],
    });
    // The reserved default is sent too, never the upstream's own default length.
    // One name only (this local deployment's default, max_tokens): OpenAI refuses both at once.
    expect({
      max_tokens: f.openai.requests[1].body.max_tokens,
      max_completion_tokens: f.openai.requests[1].body.max_completion_tokens,
    }).toEqual({ max_tokens: 50, max_completion_tokens: undefined });
  });

  it('does not charge failed calls, and records them in the ledger', async () => {
    const { id, key } = await f.createKey({ budget_yuan: 1 });
    f.openai.behaviour.failTimes = 100;
    const err: any = await sdk(key)
      .chat.completions.create({ model: 'vendor-gpt-4', messages: [{ role: 'user', content: 'hi' }] })
      .catch((e) => e);
    expect(err.status).toBe(502);
    expect(err.message).toContain('fake 500');
    const k = (await f.admin('GET', `/admin/keys/${id}`)).body;
    expect(k).toMatchObject({ spent_yuan: 0, reserved_yuan: 0 });
    const usage = await (await fetch(`${f.gw.url}/v1/usage`, { headers: { authorization: `Bearer ${key}` } })).json();
    expect(usage.data).toEqual([expect.objectContaining({ requests: 1, failed: 1, cost_yuan: 0 })]);
    const rows = await query(
      f.gw.dbUrl,
      `SELECT status, http_status, provider, cost_yuan::float AS cost FROM ai_usage_records WHERE key_id = $1`,
      [id],
    );
    expect(rows).toEqual([{ status: 'failed', http_status: 502, provider: 'primary', cost: 0 }]);
  });

  it('meters embeddings at the contract price, cache hits included', async () => {
    const { id, key } = await f.createKey({ budget_yuan: 1 });
    // Unique per run: the cache may be a Redis shared with earlier runs.
    const input = `hello world again ${randomUUID()}`;
    const hitTokens = getEncoding('cl100k_base').encode(input).length;
    await sdk(key).embeddings.create({ model: 'text-embedding-v3', input, encoding_format: 'float' });
    await sdk(key).embeddings.create({ model: 'text-embedding-v3', input, encoding_format: 'float' });
    expect(f.openai.requests).toHaveLength(1);
    const usage = await (await fetch(`${f.gw.url}/v1/usage`, { headers: { authorization: `Bearer ${key}` } })).json();
    // The upstream's count (4 words) on the miss, tiktoken's on the hit; 1 yuan per 1000 tokens.
    expect(usage.data).toEqual([
      expect.objectContaining({
        endpoint: 'embeddings',
        model: 'text-embedding-v3',
        requests: 2,
        prompt_tokens: 4 + hitTokens,
        cost_yuan: (4 + hitTokens) / 1000,
      }),
    ]);
    const statuses = await query(f.gw.dbUrl, `SELECT status FROM ai_usage_records WHERE key_id = $1 ORDER BY id`, [id]);
    expect(statuses.map((r) => r.status)).toEqual(['ok', 'cached']);
  });

  it('reports usage from hourly totals: one row per hour, endpoint and model, however many calls', async () => {
    const { id, key } = await f.createKey();
    for (let i = 0; i < 12; i++)
      await sdk(key).chat.completions.create({
        model: 'vendor-gpt-4',
        messages: [{ role: 'user', content: `call ${i}` }],
      });
    const usage = await (await fetch(`${f.gw.url}/v1/usage`, { headers: { authorization: `Bearer ${key}` } })).json();
    const [raw] = await query(
      f.gw.dbUrl,
      `SELECT count(*)::int AS calls, count(DISTINCT date_trunc('hour', created_at, 'UTC'))::int AS hours, sum(cost_yuan)::float AS cost FROM ai_usage_records WHERE key_id = $1`,
      [id],
    );
    const [hourly] = await query(
      f.gw.dbUrl,
      `SELECT count(*)::int AS rows, sum(requests)::int AS calls, sum(cost_yuan)::float AS cost FROM ai_usage_hourly WHERE key_id = $1`,
      [id],
    );
    expect(raw.calls).toBe(12);
    // The calls may straddle an hour: as many rows as hours, never one per call.
    expect(hourly).toEqual({ rows: raw.hours, calls: 12, cost: raw.cost });
    expect(usage.data.reduce((n: number, d: { requests: number }) => n + d.requests, 0)).toBe(12);
    expect(usage.total_cost_yuan).toBeCloseTo(raw.cost, 8);
    // A row written by other code (a replica older than the hourly totals, during a rolling deploy) counts too.
    await query(
      f.gw.dbUrl,
      `INSERT INTO ai_usage_records (key_id, endpoint, model, status, cost_yuan, prompt_tokens, created_at) VALUES ($1, 'chat.completions', 'vendor-gpt-4', 'ok', 0.5, 7, now())`,
      [id],
    );
    const after = await (await fetch(`${f.gw.url}/v1/usage`, { headers: { authorization: `Bearer ${key}` } })).json();
    expect(after.data.reduce((n: number, d: { requests: number }) => n + d.requests, 0)).toBe(13);
    expect(after.total_cost_yuan).toBeCloseTo(raw.cost + 0.5, 8);
  });

  it('validates the usage query and offers an admin report', async () => {
    const { key } = await f.createKey();
    const bad = await fetch(`${f.gw.url}/v1/usage?start_date=2026-02-31`, {
      headers: { authorization: `Bearer ${key}` },
    });
    expect(bad.status).toBe(400);
    expect((await bad.json()).error.param).toBe('start_date');
    const report = await f.admin('GET', '/admin/usage');
    expect(report.status).toBe(200);
    expect(report.body.data.length).toBeGreaterThan(0);
    expect(report.body.data[0]).toHaveProperty('key_id');
  });
});

describe('AI gateway metering across a restart', () => {
  it('writes the batched ledger on shutdown; keys and ledger survive a restart', async () => {
    // A flush interval longer than the test: only the shutdown flush can write these records.
    const f = await startGatewayFixture({ AI_LEDGER_FLUSH_MS: '60000' });
    let second: Awaited<ReturnType<typeof startGateway>> | undefined;
    const dbUrl = f.gw.dbUrl;
    try {
      const { id, key } = await f.createKey({ budget_yuan: 3 });
      const client = new OpenAI({ apiKey: key, baseURL: `${f.gw.url}/v1`, maxRetries: 0 });
      for (let i = 0; i < 3; i++)
        await client.chat.completions.create({
          model: 'vendor-gpt-4',
          messages: [{ role: 'user', content: 'persist me' }],
        });
      expect(await query(dbUrl, `SELECT count(*)::int AS n FROM ai_usage_records`)).toEqual([{ n: 0 }]);
      await f.gw.app.close();
      // 3 prompt tokens at 1 yuan/1k and 3 completion tokens at 2 yuan/1k, three times.
      expect(
        await query(
          dbUrl,
          `SELECT count(*)::int AS n, sum(cost_yuan)::text AS cost FROM ai_usage_records WHERE key_id = $1`,
          [id],
        ),
      ).toEqual([{ n: 3, cost: '0.0270000000' }]);

      second = await startGateway({ AI_PROVIDERS_FILE: f.providersFile, ADMIN_TOKEN }, { dbUrl });
      const again = new OpenAI({ apiKey: key, baseURL: `${second.url}/v1`, maxRetries: 0 });
      await expect(
        again.chat.completions.create({ model: 'vendor-gpt-4', messages: [{ role: 'user', content: 'still here' }] }),
      ).resolves.toBeTruthy();
      const usage = await (
        await fetch(`${second.url}/v1/usage`, { headers: { authorization: `Bearer ${key}` } })
      ).json();
      expect(usage.data[0].requests).toBe(4);
      expect(usage.key.spent_yuan).toBeCloseTo(usage.total_cost_yuan, 8);
    } finally {
      await second?.close();
      await f.close();
    }
  });
});
