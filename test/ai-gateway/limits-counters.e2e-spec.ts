/**
 * What `ai_limits_admit` reads and deletes (apps/ai-gateway/src/migrations/1796800000000-LimitCountersReadOnce.ts):
 * each window's total, kept by a trigger on its buckets, not the buckets; each concurrency limit's leases in one
 * scan; the buckets that left the window and the leases that expired are not counted, and are deleted only when met. Called straight, as the
 * lanes call it (apps/ai-gateway/src/limits/limits.repository.ts), on the gateway's migrated database.
 */
import { Client } from 'pg';
import { sqlClient } from '../support/database';
import { until } from '../support/until';
import { GatewayFixture, startGatewayFixture } from './gateway-fixture';

describe('AI gateway limits: counters read once per admission', () => {
  let f: GatewayFixture;
  let c: Client;

  beforeAll(async () => {
    f = await startGatewayFixture();
    c = await sqlClient(f.gw.dbUrl);
  });
  afterAll(async () => {
    await c?.end();
    await f?.close();
  });

  const BUCKET_MS = 1000;
  const WINDOW_MS = 60_000;
  const window = (key: string, limit: number, amount: number) => ({
    key,
    name: `["key","${key}","tokens_per_minute",null]`,
    limit,
    window_ms: WINDOW_MS,
    bucket_ms: BUCKET_MS,
    amount,
  });
  const lease = (key: string, limit: number) => ({
    key,
    name: `["key","${key}","max_concurrent_requests",null]`,
    limit,
  });
  const admit = async (now: number, p: { windows?: unknown[]; leases?: unknown[] }) =>
    (
      await c.query(`SELECT ai_limits_admit($1::jsonb) AS r`, [
        JSON.stringify({ now, hold: crypto.randomUUID(), hold_ttl_ms: 60_000, ...p }),
      ])
    ).rows[0].r;
  /** Scans of a table by this session's transaction so far (index and sequential). */
  const scans = async (table: string) =>
    (
      await c.query(
        `SELECT (coalesce(idx_scan, 0) + seq_scan)::int AS n FROM pg_stat_xact_user_tables WHERE relname = $1`,
        [table],
      )
    ).rows[0]?.n ?? 0;
  /** Rows of a table this session's transaction has fetched so far (through an index or sequentially). */
  const fetched = async (table: string) =>
    (
      await c.query(
        `SELECT (coalesce(idx_tup_fetch, 0) + seq_tup_read)::int AS n FROM pg_stat_xact_user_tables WHERE relname = $1`,
        [table],
      )
    ).rows[0]?.n ?? 0;
  const rows = async (sql: string, params: unknown[]) => (await c.query(sql, params)).rows;
  const total = async (key: string) =>
    Number((await rows(`SELECT amount FROM ai_limit_window_totals WHERE key = $1`, [key]))[0]?.amount ?? 0);

  it("an admission reads a window's total, not its buckets; buckets that left the window are not counted, and go when met", async () => {
    const now = 1_800_000_000_000;
    const current = Math.floor(now / BUCKET_MS);
    const first = Math.floor((now - WINDOW_MS) / BUCKET_MS);
    const key = `tpm:counters-${crypto.randomUUID()}`;
    // 59 buckets of 1 in the window (a minute of calls behind it), and 100 a bucket before it.
    await c.query(
      `INSERT INTO ai_limit_windows (key, bucket, amount)
       SELECT $1, b, 1 FROM generate_series($2::bigint, $2::bigint + 58) b UNION ALL SELECT $1, $2::bigint - 1, 100`,
      [key, first],
    );
    expect(await total(key)).toBe(159);

    await c.query('BEGIN');
    try {
      // A check that reserves nothing (amount 0): the old bucket is met and deleted, and leaves the total.
      expect(await admit(now, { windows: [window(key, 100, 0)] })).toMatchObject({
        allowed: true,
        windows: [expect.objectContaining({ used: 59 })],
      });
      expect(await total(key)).toBe(59);
      expect(await rows(`SELECT count(*)::int AS n FROM ai_limit_windows WHERE key = $1`, [key])).toEqual([{ n: 59 }]);

      // Again, nothing old left: not one bucket row is read (before, each admission summed all 59).
      const before = await fetched('ai_limit_windows');
      expect(await admit(now, { windows: [window(key, 100, 0)] })).toMatchObject({
        windows: [expect.objectContaining({ used: 59 })],
      });
      expect(await fetched('ai_limit_windows')).toBe(before);

      // 59 + 42 > 100 is refused; 59 + 41 is reserved in the current bucket, and counted in the total.
      expect(await admit(now, { windows: [window(key, 100, 42)] })).toMatchObject({
        allowed: false,
        refused: { kind: 'window' },
      });
      expect(await admit(now, { windows: [window(key, 100, 41)] })).toMatchObject({
        allowed: true,
        windows: [expect.objectContaining({ used: 100 })],
      });
      expect(
        await rows(`SELECT amount::int FROM ai_limit_windows WHERE key = $1 AND bucket = $2`, [key, current]),
      ).toEqual([{ amount: 41 }]);
      expect(await total(key)).toBe(100);
      expect(await admit(now, { windows: [window(key, 100, 1)] })).toMatchObject({ allowed: false });
    } finally {
      await c.query('ROLLBACK');
    }
  });

  it("a window's total follows every write of its buckets, whoever makes it (a replica on the previous function too)", async () => {
    const key = `rpm:counters-${crypto.randomUUID()}`;
    const upsert = (bucket: number, amount: number) =>
      c.query(
        `INSERT INTO ai_limit_windows AS w (key, bucket, amount) VALUES ($1, $2, $3)
         ON CONFLICT (key, bucket) DO UPDATE SET amount = w.amount + excluded.amount`,
        [key, bucket, amount],
      );
    await upsert(10, 3);
    await upsert(11, 4);
    await upsert(10, 2);
    expect(await total(key)).toBe(9);
    await c.query(`UPDATE ai_limit_windows SET amount = greatest(0, amount - 7) WHERE key = $1 AND bucket = 11`, [key]);
    expect(await total(key)).toBe(5);
    await c.query(`DELETE FROM ai_limit_windows WHERE key = $1 AND bucket < 11`, [key]);
    expect(await total(key)).toBe(0);
    await upsert(12, 6);
    expect(await total(key)).toBe(6);
  });

  it("a concurrency limit's leases are counted in one scan; expired ones are not counted, and go when met", async () => {
    const key = `conc:counters-${crypto.randomUUID()}`;
    const [live, expired] = [crypto.randomUUID(), crypto.randomUUID()];
    await c.query(
      `INSERT INTO ai_limit_leases (key, hold_id, expires_at)
       VALUES ($1, $2, now() + interval '1 minute'), ($1, $3, now() - interval '1 second')`,
      [key, live, expired],
    );

    await c.query('BEGIN');
    try {
      const before = await scans('ai_limit_leases');
      // Limit 2: the live lease counts, the expired one does not, so this call is the second.
      expect(await admit(Date.now(), { leases: [lease(key, 2)] })).toMatchObject({ allowed: true });
      // The count, the delete of the expired lease it met, and the count again (a lease renewed meanwhile is live).
      expect((await scans('ai_limit_leases')) - before).toBe(3);
      const held = await rows(`SELECT hold_id FROM ai_limit_leases WHERE key = $1`, [key]);
      expect(held.map((r) => r.hold_id)).not.toContain(expired);
      expect(held).toHaveLength(2);
      const afterFirst = await scans('ai_limit_leases');

      // Nothing expired left: one scan to count (2 of 2: refused), no delete.
      expect(await admit(Date.now(), { leases: [lease(key, 2)] })).toMatchObject({
        allowed: false,
        refused: { kind: 'concurrency' },
      });
      expect(await scans('ai_limit_leases')).toBe(afterFirst + 1);
    } finally {
      await c.query('ROLLBACK');
    }
  });

  it('a lease renewed while an admission meets it expired is counted (the count is taken again after the delete)', async () => {
    const key = `conc:counters-${crypto.randomUUID()}`;
    const hold = crypto.randomUUID();
    await c.query(
      `INSERT INTO ai_limit_leases (key, hold_id, expires_at) VALUES ($1, $2, now() - interval '1 second')`,
      [key, hold],
    );
    await c.query(
      `INSERT INTO ai_limit_holds (id, budgets, expires_at) VALUES ($1, '[]', now() + interval '1 minute')`,
      [hold],
    );
    // A renewal of that lease's call (ai_limits_renew takes no counter lock), not yet committed: it holds the row.
    const renewer = await sqlClient(f.gw.dbUrl);
    const observer = await sqlClient(f.gw.dbUrl);
    try {
      await renewer.query('BEGIN');
      expect((await renewer.query(`SELECT ai_limits_renew($1::uuid, 60000) AS kept`, [hold])).rows[0].kept).toBe(true);
      // The admission counts the lease as expired, and its delete waits for the renewal.
      const admitted = admit(Date.now(), { leases: [lease(key, 1)] });
      await until(async () => {
        const { rows: waiting } = await observer.query(
          `SELECT count(*)::int AS n FROM pg_stat_activity WHERE pid = $1 AND wait_event_type = 'Lock'`,
          [(c as unknown as { processID: number }).processID],
        );
        return waiting[0].n === 1;
      });
      await renewer.query('COMMIT');
      // The renewed lease is live: with a limit of 1, this call is refused, and the lease is kept.
      expect(await admitted).toMatchObject({ allowed: false, refused: { kind: 'concurrency' } });
      expect(await rows(`SELECT hold_id FROM ai_limit_leases WHERE key = $1`, [key])).toEqual([{ hold_id: hold }]);
    } finally {
      await renewer.query('ROLLBACK').catch(() => undefined);
      await renewer.end();
      await observer.end();
      await c.query(`DELETE FROM ai_limit_holds WHERE id = $1`, [hold]);
    }
  });

  it('an admission and a settlement reach budgets and leases by their keys, not by reading the tables', async () => {
    // Plans are kept per session: a fresh one plans them here, on whatever the tables hold now.
    const d = await sqlClient(f.gw.dbUrl);
    const subject = `k:counters-${crypto.randomUUID()}`;
    const start = Date.UTC(2026, 10, 28);
    const budget = {
      key: `b:${subject}:${start}`,
      name: '["key","counters","budget",null]',
      subject,
      period: 'daily',
      period_start: start,
      period_end: start + 86_400_000,
      budget_yuan: '100',
      budget_tokens: null,
      alert_threshold: null,
      seed_key: null,
      yuan: '0.01',
      tokens: 10,
    };
    const leases = [lease(`conc:${subject}`, 100)];
    const seqScans = async () =>
      (
        await d.query(
          `SELECT coalesce(sum(seq_scan), 0)::int AS n FROM pg_stat_xact_user_tables
            WHERE relname IN ('ai_budget_usage', 'ai_limit_leases', 'ai_limit_holds')`,
        )
      ).rows[0].n;
    try {
      const call = async () => {
        const hold = crypto.randomUUID();
        const now = Date.now();
        const admitted = (
          await d.query(`SELECT ai_limits_admit($1::jsonb) AS r`, [
            JSON.stringify({ now, hold, hold_ttl_ms: 60_000, leases, budgets: [budget] }),
          ])
        ).rows[0].r;
        expect(admitted).toMatchObject({ allowed: true });
        const settled = (
          await d.query(`SELECT ai_limits_settle($1::jsonb) AS r`, [
            JSON.stringify({ now, hold, leases, budgets: [{ ...budget, yuan: '0.005', tokens: 5 }] }),
          ])
        ).rows[0].r;
        expect(settled).toMatchObject({ settled: true });
      };
      // PostgreSQL plans a function's statements for good after their fifth run.
      for (let i = 0; i < 6; i++) await call();
      // Then four more in one transaction, whose scans this session's statistics count.
      await d.query('BEGIN');
      for (let i = 0; i < 4; i++) await call();
      expect(await seqScans()).toBe(0);
      await d.query('COMMIT');
      const [usage] = await rows(
        `SELECT spent_yuan::text, reserved_yuan::text, spent_tokens::int FROM ai_budget_usage WHERE subject = $1`,
        [subject],
      );
      expect(usage).toEqual({ spent_yuan: '0.0500000000', reserved_yuan: '0.0000000000', spent_tokens: 50 });
    } finally {
      await d.end();
    }
  });
});
