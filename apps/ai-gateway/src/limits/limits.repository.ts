import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
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

/**
 * The limit counters in PostgreSQL: each call is one statement, a function of the migration
 * apps/ai-gateway/src/migrations/1796200000000-ProjectsAndLimits.ts that locks, checks and reserves
 * (or settles) every counter it is given in one transaction.
 */
@Injectable()
export class LimitsRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  async admit(p: {
    now: number;
    hold: string;
    hold_ttl_ms: number;
    windows?: WindowCounter[];
    leases?: LeaseCounter[];
    budgets?: BudgetCounter[];
  }): Promise<AdmitAnswer> {
    const [row] = await this.db.query<Array<{ r: AdmitAnswer }>>(`SELECT ai_limits_admit($1::jsonb) AS r`, [
      JSON.stringify(p),
    ]);
    return row.r;
  }

  async settle(p: {
    now: number;
    hold: string;
    key_id?: string;
    key_yuan?: string;
    windows?: WindowSettlement[];
    leases?: Array<{ key: string }>;
    budgets?: BudgetCounter[];
  }): Promise<SettleAnswer> {
    const [row] = await this.db.query<Array<{ r: SettleAnswer }>>(`SELECT ai_limits_settle($1::jsonb) AS r`, [
      JSON.stringify(p),
    ]);
    return row.r;
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
    await this.db.query(`DELETE FROM ai_limit_leases WHERE expires_at <= now()`);
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
