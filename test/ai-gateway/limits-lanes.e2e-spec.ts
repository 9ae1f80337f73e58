/**
 * A tenant's limit statements hold one pooled connection however many calls it makes at once
 * (apps/ai-gateway/src/limits/limits.repository.ts): they go one round trip at a time from a replica, those
 * that queued meanwhile together in the next (ai_limits_batch). Before, each of a key's concurrent calls took
 * a connection of the pool (20) to wait in PostgreSQL on its counters' advisory locks: 64 calls of one key
 * with limits took the whole pool, and another key's calls waited behind them (npm run bench -- --only noisy,
 * pattern limited: key B p50 14.8 -> 3 355 ms, a third of its calls unanswered). The tests hold a tenant's
 * counter with an advisory lock of their own, so its calls queue, and count what waits where.
 */
import { Client } from 'pg';
import { LANE_STATEMENT_TIMEOUT_MS, LimitsRepository } from '../../apps/ai-gateway/src/limits/limits.repository';
import { sqlClient } from '../support/database';
import { until } from '../support/until';
import { GatewayFixture, startGatewayFixture } from './gateway-fixture';

describe('AI gateway limits: one lane per tenant', () => {
  let f: GatewayFixture;
  let repo: LimitsRepository;
  let locker: Client;
  let observer: Client;

  beforeAll(async () => {
    f = await startGatewayFixture();
    repo = f.gw.app.get(LimitsRepository);
    locker = await sqlClient(f.gw.dbUrl);
    observer = await sqlClient(f.gw.dbUrl);
  });
  afterAll(async () => {
    await locker?.end();
    await observer?.end();
    await f?.close();
  });

  /** Holds the advisory lock ai_limits_lock takes for `counter` until the returned function is called. */
  async function holdCounter(counter: string): Promise<() => Promise<void>> {
    await locker.query(`SELECT pg_advisory_lock(hashtextextended($1, 0))`, [counter]);
    let held = true;
    // Once: a test's catch may release again after a failed expectation.
    return async () => {
      if (!held) return;
      held = false;
      await locker.query(`SELECT pg_advisory_unlock(hashtextextended($1, 0))`, [counter]);
    };
  }

  /** Sessions of the gateway's pool waiting in PostgreSQL for an advisory lock. */
  async function waitingOnLocks(): Promise<number> {
    const { rows } = await observer.query(
      `SELECT count(*)::int AS n FROM pg_stat_activity
        WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event = 'advisory' AND pid <> $1`,
      [(locker as unknown as { processID: number }).processID],
    );
    return rows[0].n;
  }

  /** A spy on the app's queries (the repository's data source). */
  const spyOnQueries = () =>
    jest.spyOn((repo as unknown as { db: { query: (...args: unknown[]) => Promise<unknown> } }).db, 'query');
  /** The limit functions among the queries seen (other work of the app uses the same data source). */
  const limitStatements = (query: ReturnType<typeof spyOnQueries>) =>
    query.mock.calls.map(([sql]) => String(sql).match(/ai_limits_[a-z]+/)?.[0]).filter(Boolean);

  const chat = (key: string) =>
    fetch(`${f.gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'vendor-gpt-4', messages: [{ role: 'user', content: 'hi' }], max_tokens: 5 }),
    });

  it('30 calls of one key wait in the gateway on one connection; another key is answered meanwhile; each is counted once, refusals included', async () => {
    const project = (await f.admin('POST', '/admin/projects', { name: 'lanes-p', requests_per_minute: 1000 })).body;
    const a = await f.createKey({ name: 'lanes-a', project_id: project.id, requests_per_minute: 25 });
    const b = await f.createKey({ name: 'lanes-b', requests_per_minute: 1000, max_concurrent_requests: 5 });
    const lane = `p:${project.id}`;

    const release = await holdCounter(`rpm:k:${a.id}`);
    let answers: Response[];
    try {
      const calls = Array.from({ length: 30 }, () => chat(a.key));
      // The first statement of the lane waits in PostgreSQL; the other 29 wait in the gateway.
      await until(async () => repo.waiting(lane) === 29 && (await waitingOnLocks()) === 1);
      expect(await waitingOnLocks()).toBe(1);

      // The pool is free for every other tenant: key B (its own lane) is counted, admitted and settled.
      const other = await chat(b.key);
      expect(other.status).toBe(200);
      expect(repo.waiting(lane)).toBe(29);
      await release();
      answers = await Promise.all(calls);
    } catch (e) {
      await release();
      throw e;
    }

    // Batched, each call was answered its own count: 25 within the key's 25 a minute, 5 refused.
    const statuses = answers.map((r) => r.status).sort();
    expect(statuses.filter((s) => s === 200)).toHaveLength(25);
    expect(statuses.filter((s) => s === 429)).toHaveLength(5);
    const remaining = answers
      .filter((r) => r.status === 200)
      .map((r) => Number(r.headers.get('x-ratelimit-remaining-requests')))
      .sort((x, y) => x - y);
    expect(remaining).toEqual(Array.from({ length: 25 }, (_, i) => i));
    const refused = await Promise.all(answers.filter((r) => r.status === 429).map((r) => r.json()));
    for (const body of refused) expect(body.error.code).toBe('rate_limit_exceeded');
    expect(repo.waiting(lane)).toBe(0);
  });

  it('a statement without an answer fails its call with 503 limits_unavailable after the lane timeout, and the lane goes on', async () => {
    const project = (await f.admin('POST', '/admin/projects', { name: 'lanes-silent', requests_per_minute: 1000 }))
      .body;
    const a = await f.createKey({ name: 'lanes-silent-a', project_id: project.id, requests_per_minute: 100 });
    const lane = `p:${project.id}`;
    // The lane's timers, fired by the test (a connection gone silent is stood in for by a statement that waits on
    // the test's lock: neither answers nor fails).
    const timers: Array<{ ms: number; fire: () => void; cancelled: boolean }> = [];
    const realTimer = repo.timer;
    repo.timer = (ms, fire) => {
      const t = { ms, fire, cancelled: false };
      timers.push(t);
      return () => (t.cancelled = true);
    };
    const release = await holdCounter(`rpm:k:${a.id}`);
    try {
      const first = chat(a.key);
      await until(async () => (await waitingOnLocks()) === 1);
      const second = chat(a.key);
      await until(() => repo.waiting(lane) === 1);
      expect(timers).toHaveLength(1);
      expect(timers[0].ms).toBe(LANE_STATEMENT_TIMEOUT_MS);

      timers[0].fire();
      const refused = await first;
      expect(refused.status).toBe(503);
      expect(refused.headers.get('retry-after')).toBe('2');
      expect((await refused.json()).error).toMatchObject({ type: 'service_unavailable', code: 'limits_unavailable' });
      // The next statement of the lane is sent while the first is still unanswered: two sessions wait on the lock.
      await until(async () => (await waitingOnLocks()) === 2);
      expect(repo.waiting(lane)).toBe(0);

      await release();
      expect((await second).status).toBe(200);
      // Answered in time: its timer was cancelled, never fired.
      expect(timers[1].cancelled).toBe(true);
    } catch (e) {
      await release();
      throw e;
    } finally {
      repo.timer = realTimer;
    }
  });

  it('a statement PostgreSQL refuses inside a batch fails alone: the calls beside it are answered', async () => {
    const counter = `conc:k:lanes-direct`;
    const lease = { key: counter, name: '["key","direct","max_concurrent_requests",null]', limit: 2 };
    const release = await holdCounter(counter);
    const query = spyOnQueries();
    let results: PromiseSettledResult<unknown>[];
    let statements: Array<string | undefined>;
    try {
      const now = Date.now();
      const asked = [
        repo.admit('k:lanes-direct', { now, hold: crypto.randomUUID(), hold_ttl_ms: 60_000, leases: [lease] }),
        repo.admit('k:lanes-direct', { now, hold: 'not-a-uuid', hold_ttl_ms: 60_000, leases: [lease] }),
        repo.admit('k:lanes-direct', { now, hold: crypto.randomUUID(), hold_ttl_ms: 60_000, leases: [lease] }),
        repo.admit('k:lanes-direct', { now, hold: crypto.randomUUID(), hold_ttl_ms: 60_000, leases: [lease] }),
      ];
      // The first waits in PostgreSQL on the test's lock, the other three in the gateway.
      await until(async () => (await waitingOnLocks()) === 1);
      expect(repo.waiting('k:lanes-direct')).toBe(3);
      await release();
      results = await Promise.allSettled(asked);
      statements = limitStatements(query);
    } catch (e) {
      await release();
      throw e;
    } finally {
      query.mockRestore();
    }
    // The first alone, the three that queued in one batch (refused), then each of them alone.
    expect(statements).toEqual([
      'ai_limits_admit',
      'ai_limits_batch',
      'ai_limits_admit',
      'ai_limits_admit',
      'ai_limits_admit',
    ]);
    const [first, bad, third, fourth] = results;
    expect(first).toMatchObject({ status: 'fulfilled', value: { allowed: true } });
    // The last three went in one batch, which PostgreSQL refused for the bad hold id: each again alone.
    expect(bad).toMatchObject({ status: 'rejected', reason: expect.objectContaining({ code: '22P02' }) });
    expect(third).toMatchObject({ status: 'fulfilled', value: { allowed: true } });
    // Two leases of two allowed: the fourth is refused for concurrency, not failed.
    expect(fourth).toMatchObject({
      status: 'fulfilled',
      value: { allowed: false, refused: expect.objectContaining({ kind: 'concurrency' }) },
    });
    const { rows } = await observer.query(`SELECT count(*)::int AS n FROM ai_limit_leases WHERE key = $1`, [counter]);
    expect(rows[0].n).toBe(2);
  });

  it("a batch locks its calls' counters once, to its transaction's end; no call after it, or after a failed batch, goes without its locks", async () => {
    const c = await sqlClient(f.gw.dbUrl);
    /** Whether another session could take the counter's lock now (it cannot while a transaction holds it). */
    const free = async (counter: string) =>
      (await observer.query(`SELECT pg_try_advisory_xact_lock(hashtextextended($1, 0)) AS free`, [counter])).rows[0]
        .free as boolean;
    const window = (key: string) => ({
      key,
      name: '["key","marks","tokens_per_minute",null]',
      limit: 1000,
      window_ms: 60_000,
      bucket_ms: 1000,
      amount: 1,
    });
    const admit = (key: string) => ({
      fn: 'admit',
      p: { now: Date.now(), hold: crypto.randomUUID(), hold_ttl_ms: 60_000, windows: [window(key)] },
    });
    const mark = async () =>
      (await c.query(`SELECT coalesce(current_setting('ai.limits_batch_locked', true), '') AS m`)).rows[0].m;
    try {
      await c.query('BEGIN');
      const { rows } = await c.query(`SELECT ai_limits_batch($1::jsonb) AS r`, [
        JSON.stringify([admit('tpm:marks-a'), admit('tpm:marks-b'), admit('tpm:marks-a')]),
      ]);
      expect(rows[0].r).toEqual([
        expect.objectContaining({ allowed: true }),
        expect.objectContaining({ allowed: true }),
        expect.objectContaining({ allowed: true }),
      ]);
      // Every counter of the batch stays locked until its transaction ends.
      expect(await free('tpm:marks-a')).toBe(false);
      expect(await free('tpm:marks-b')).toBe(false);
      // The batch's mark (its calls skip locking) is gone once it returned: a call after it locks its own.
      expect(await mark()).toBe('');
      await c.query(`SELECT ai_limits_admit($1::jsonb)`, [JSON.stringify(admit('tpm:marks-c').p)]);
      expect(await free('tpm:marks-c')).toBe(false);

      // A batch that fails after it marked the transaction (an unknown operation, after the locks) leaves no mark.
      await c.query('SAVEPOINT failing');
      await expect(
        c.query(`SELECT ai_limits_batch($1::jsonb)`, [
          JSON.stringify([admit('tpm:marks-d'), { fn: 'nonsense', p: admit('tpm:marks-d').p }]),
        ]),
      ).rejects.toMatchObject({ message: expect.stringContaining('unknown fn') });
      await c.query('ROLLBACK TO SAVEPOINT failing');
      expect(await mark()).toBe('');
      await c.query(`SELECT ai_limits_admit($1::jsonb)`, [JSON.stringify(admit('tpm:marks-e').p)]);
      expect(await free('tpm:marks-e')).toBe(false);
    } finally {
      await c.query('ROLLBACK').catch(() => undefined);
      await c.end();
    }
    expect(await free('tpm:marks-a')).toBe(true);
  });

  it('a batch that charges several keys locks their rows in id order, as the ledger does: no cycle with a charge in flight', async () => {
    const [lo, hi] = [
      (await f.createKey({ name: 'lanes-lo' })).id,
      (await f.createKey({ name: 'lanes-hi' })).id,
    ].sort();
    const lane = 'p:lanes-deadlock';
    const lease = { key: 'conc:lanes-deadlock', name: '["project","dl","max_concurrent_requests",null]', limit: 100 };
    const admitted = async () => {
      const hold = crypto.randomUUID();
      await repo.admit(lane, { now: Date.now(), hold, hold_ttl_ms: 60_000, leases: [lease] });
      return hold;
    };
    const [forHi, forLo] = [await admitted(), await admitted()];
    const charge = (hold: string, keyId: string) =>
      repo.settle(lane, { now: Date.now(), hold, leases: [lease], key_id: keyId, key_yuan: '0.0100000000' });

    // A charge in flight elsewhere (the ledger's order: lo, then hi) holds lo's row.
    const ledger = await sqlClient(f.gw.dbUrl);
    const query = spyOnQueries();
    const release = await holdCounter(lease.key);
    try {
      await ledger.query('BEGIN');
      await ledger.query(`UPDATE ai_api_keys SET last_used_at = now() WHERE id = $1`, [lo]);
      // One statement of the lane waits on the test's lock; the two charges queue behind it, hi's first.
      const first = repo.admit(lane, {
        now: Date.now(),
        hold: crypto.randomUUID(),
        hold_ttl_ms: 60_000,
        leases: [lease],
      });
      const charges = [charge(forHi, hi), charge(forLo, lo)];
      expect(repo.waiting(lane)).toBe(2);
      await release();
      await first;
      // The batch waits for lo's row, holding no key row: the other charge takes hi's row at once and ends.
      await until(async () => {
        const { rows } = await observer.query(
          `SELECT count(*)::int AS n FROM pg_stat_activity
            WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event IN ('transactionid', 'tuple')`,
        );
        return rows[0].n === 1;
      });
      await ledger.query(`UPDATE ai_api_keys SET last_used_at = now() WHERE id = $1`, [hi]);
      await ledger.query('COMMIT');
      expect(await Promise.all(charges)).toEqual([
        expect.objectContaining({ settled: true }),
        expect.objectContaining({ settled: true }),
      ]);
      // In one batch, never refused (a deadlock would have aborted it, and each charge gone again alone).
      const statements = limitStatements(query);
      expect(statements).toEqual(['ai_limits_admit', 'ai_limits_batch']);
    } finally {
      query.mockRestore();
      await release().catch(() => undefined);
      await ledger.query('ROLLBACK').catch(() => undefined);
      await ledger.end();
    }
    const { rows } = await observer.query(
      `SELECT id, spent_yuan::text FROM ai_api_keys WHERE id = ANY($1) ORDER BY id`,
      [[lo, hi]],
    );
    expect(rows.map((r) => r.spent_yuan)).toEqual(['0.0100000000', '0.0100000000']);
  });
});
