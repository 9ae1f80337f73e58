import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { GatewayError, GatewayErrorCode } from '../errors';
import type { BudgetCounter, LeaseCounter, WindowCounter } from './call-limits';
import type { AdmitAnswer, SettleAnswer, WindowSettlement } from './limit-answer';

export interface BudgetUsageRow {
  subject: string;
  period_start: number;
  spent_yuan: string;
  reserved_yuan: string;
  spent_tokens: number;
  reserved_tokens: number;
}

/** A statement's argument: what ai_limits_admit or ai_limits_settle takes. */
export interface AdmitArgs {
  now: number;
  hold: string;
  hold_ttl_ms: number;
  windows?: WindowCounter[];
  leases?: LeaseCounter[];
  budgets?: BudgetCounter[];
}

export interface SettleArgs {
  now: number;
  hold: string;
  key_id?: string;
  key_yuan?: string;
  windows?: WindowSettlement[];
  leases?: Array<{ key: string }>;
  budgets?: BudgetCounter[];
}

interface Queued {
  fn: 'admit' | 'settle';
  p: AdmitArgs | SettleArgs;
  resolve: (answer: unknown) => void;
  reject: (error: unknown) => void;
}

/** Calls of one tenant in one statement at most: the transaction holds their counters' locks this long. */
export const MAX_CALLS_PER_STATEMENT = 32;

/**
 * How long a lane waits for its statement's answer. A statement waits at most lock_timeout (10 s, set on the
 * functions) for its counters' locks and runs in milliseconds; one without an answer or an error after this
 * long is on a connection gone silent (a peer lost without a TCP reset, which the pool's keep-alive probes
 * find only minutes later): its calls fail with 503 limits_unavailable and the lane goes on, instead of holding
 * every later call of the tenant. The silent connection stays out of the pool until the probes end it (if the
 * database is gone for every connection, the pool's acquire timeout then answers the next statements).
 */
export const LANE_STATEMENT_TIMEOUT_MS = 30_000;

/** Starts a timer (setTimeout unless a test replaces it); the returned function cancels it. */
export type LaneTimer = (ms: number, fire: () => void) => () => void;

/**
 * The limit counters in PostgreSQL: each call is one statement, a function of the migration
 * apps/ai-gateway/src/migrations/1796200000000-ProjectsAndLimits.ts that locks, checks and reserves
 * (or settles) every counter it is given in one transaction.
 *
 * The statements of one tenant (`lane`: its project, or the key without one) go one at a time from this
 * replica, those asked meanwhile together in the next (ai_limits_batch, 1796600000000-LimitsBatch.ts): they
 * lock the same counters, so in PostgreSQL they would wait for each other anyway, each holding a pooled
 * connection while it waits. Queued here, a tenant holds at most one connection of the pool for its limits
 * however many calls it makes at once, where each call took one to wait in PostgreSQL.
 */
@Injectable()
export class LimitsRepository {
  private readonly lanes = new Map<string, Queued[]>();
  /** Replaced by tests, which fire it themselves. */
  timer: LaneTimer = (ms, fire) => {
    const t = setTimeout(fire, ms);
    t.unref();
    return () => clearTimeout(t);
  };

  constructor(@InjectDataSource() private readonly db: DataSource) {}

  admit(lane: string, p: AdmitArgs): Promise<AdmitAnswer> {
    return this.enqueue(lane, 'admit', p) as Promise<AdmitAnswer>;
  }

  settle(lane: string, p: SettleArgs): Promise<SettleAnswer> {
    return this.enqueue(lane, 'settle', p) as Promise<SettleAnswer>;
  }

  /** Statements waiting in each lane behind the one on its way (for tests). */
  waiting(lane: string): number {
    return this.lanes.get(lane)?.length ?? 0;
  }

  private enqueue(lane: string, fn: Queued['fn'], p: Queued['p']): Promise<unknown> {
    return new Promise((resolve, reject) => {
      const queued = this.lanes.get(lane);
      if (queued) queued.push({ fn, p, resolve, reject });
      else {
        const q: Queued[] = [{ fn, p, resolve, reject }];
        this.lanes.set(lane, q);
        void this.drain(lane, q);
      }
    });
  }

  /** Sends the lane's statements until none is left; the first goes at once. */
  private async drain(lane: string, q: Queued[]): Promise<void> {
    try {
      while (q.length) await this.send(q.splice(0, MAX_CALLS_PER_STATEMENT));
    } finally {
      this.lanes.delete(lane);
      // Only after a fault of this loop itself (send settles every call it takes): none is left waiting.
      for (const left of q.splice(0)) left.reject(new Error('the limits lane stopped'));
    }
  }

  private async send(batch: Queued[]): Promise<void> {
    if (batch.length === 1) return this.alone(batch[0]);
    let answers: unknown[];
    try {
      const [row] = await this.answered(
        this.db.query<Array<{ r: unknown[] }>>(`SELECT ai_limits_batch($1::jsonb) AS r`, [
          JSON.stringify(batch.map(({ fn, p }) => ({ fn, p }))),
        ]),
      );
      answers = row.r;
    } catch (e) {
      // PostgreSQL refused the statement (its transaction rolled back, nothing counted): each call alone, so
      // one call's error is its own. Any other failure (the connection, the server going away, which may
      // come after a commit) is every call's: run again alone, an admission could count twice.
      if (!refusedByServer(e)) {
        for (const b of batch) b.reject(e);
        return;
      }
      for (const b of batch) await this.alone(b);
      return;
    }
    batch.forEach((b, i) => b.resolve(answers[i]));
  }

  /** One call in its own statement, settled with its answer or its error. */
  private async alone({ fn, p, resolve, reject }: Queued): Promise<void> {
    try {
      const [row] = await this.answered(
        this.db.query<Array<{ r: unknown }>>(
          fn === 'admit' ? `SELECT ai_limits_admit($1::jsonb) AS r` : `SELECT ai_limits_settle($1::jsonb) AS r`,
          [JSON.stringify(p)],
        ),
      );
      resolve(row.r);
    } catch (e) {
      reject(e);
    }
  }

  /**
   * The statement's answer, or LimitsUnavailable after LANE_STATEMENT_TIMEOUT_MS. Not known to have failed in
   * PostgreSQL (it may still commit), so the calls are not sent again: an admission given up here is left to
   * expire with its hold (AI_BUDGET_HOLD_TTL_MS), a settlement to the sweep, as after a lost connection.
   */
  private answered<T>(statement: Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const cancel = this.timer(LANE_STATEMENT_TIMEOUT_MS, () =>
        reject(new GatewayError(GatewayErrorCode.LimitsUnavailable)),
      );
      void statement.then(resolve, reject).finally(cancel);
    });
  }

  /**
   * Releases the holds of calls that never settled (a replica that died), one transaction each, at most
   * `max` per call; then drops expired leases. Answers how many holds were released.
   */
  async sweep(max = 1000): Promise<number> {
    let n = 0;
    while (n < max) {
      const [row] = await this.db.query<Array<{ found: boolean }>>(`SELECT ai_limits_release_expired() AS found`);
      if (!row.found) break;
      n++;
    }
    // Rows an admission is deleting (or locks) are left to it: taking them in scan order could wait in a cycle.
    await this.db.query(
      `DELETE FROM ai_limit_leases WHERE ctid IN (SELECT ctid FROM ai_limit_leases WHERE expires_at <= now() FOR UPDATE SKIP LOCKED)`,
    );
    return n;
  }

  /** Keeps a running call's hold and leases for `ttlMs` more; false when the hold is gone (settled or swept). */
  async renew(hold: string, ttlMs: number): Promise<boolean> {
    const [row] = await this.db.query<Array<{ kept: boolean }>>(
      `SELECT ai_limits_renew($1::uuid, $2::bigint) AS kept`,
      [hold, ttlMs],
    );
    return row.kept;
  }

  /**
   * The usage of the given budget periods, one row each, in order: nothing spent for a period without a
   * row yet, but a key's lifetime period starts from what the key spent (as ai_limits_admit seeds it).
   */
  async usage(periods: Array<{ subject: string; period_start: number }>): Promise<BudgetUsageRow[]> {
    if (!periods.length) return [];
    return this.db.query(
      `SELECT q.subject, q.period_start::float8 AS period_start,
              coalesce(u.spent_yuan, CASE WHEN q.period_start = 0 AND q.subject LIKE 'k:%'
                                          THEN (SELECT k.spent_yuan FROM ai_api_keys k WHERE k.id = substr(q.subject, 3)::uuid) END, 0)::text AS spent_yuan,
              coalesce(u.reserved_yuan, 0)::text AS reserved_yuan, coalesce(u.spent_tokens, 0)::float8 AS spent_tokens,
              coalesce(u.reserved_tokens, 0)::float8 AS reserved_tokens
         FROM ROWS FROM (json_to_recordset($1::json) AS (subject text, period_start bigint)) WITH ORDINALITY AS q(subject, period_start, n)
         LEFT JOIN ai_budget_usage u ON u.subject = q.subject AND u.period_start = to_timestamp(q.period_start / 1000.0)
        ORDER BY q.n`,
      [JSON.stringify(periods)],
    );
  }
}

/**
 * An error PostgreSQL answered for the statement itself (severity ERROR: its transaction rolled back), as
 * opposed to a lost connection, a pool timeout, or the server ending the session (FATAL; classes 08
 * connection, 53 resources, 57 operator intervention), after which the statement may have committed.
 */
function refusedByServer(e: unknown): boolean {
  const d = ((e as { driverError?: unknown } | null)?.driverError ?? e) as {
    code?: unknown;
    severity?: unknown;
  } | null;
  return (
    typeof d?.code === 'string' && /^[0-9A-Z]{5}$/.test(d.code) && !/^(08|53|57)/.test(d.code) && d.severity === 'ERROR'
  );
}
