import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { withoutStatementTimeout } from '@app/database';
import { CodeChannel, VerificationCode } from './verification-code.entity';

export type CodeAttempt = 'matched' | 'wrong' | 'exhausted' | 'none';

/** The only place that reads or writes verification codes. */
@Injectable()
export class VerificationCodesRepository {
  constructor(private readonly db: DataSource) {}

  /** Stores a new code and retires the older live ones of the same target (only the newest counts). */
  async replace(code: Partial<VerificationCode>): Promise<void> {
    await this.db.transaction(async (m) => {
      await m.query(
        `UPDATE verification_codes SET consumed_time = now() WHERE channel = $1 AND target = $2 AND consumed_time IS NULL`,
        [code.channel, code.target],
      );
      await m.getRepository(VerificationCode).insert(code);
    });
  }

  async delete(id: string): Promise<void> {
    await this.db.getRepository(VerificationCode).delete({ id });
  }

  /**
   * One atomic statement: counts a wrong guess against the newest live code, or (when `consume`)
   * uses a right one up. The row lock serializes concurrent guesses and `attempts < max_attempts`
   * is re-checked after the lock, so parallel wrong guesses can never exceed the budget. `now` (the
   * app's Clock) decides expiry, like the expiry time it was stored with.
   */
  async attempt(
    channel: CodeChannel,
    target: string,
    codeHash: string,
    consume: boolean,
    now: Date,
  ): Promise<{ result: CodeAttempt; attemptsLeft: number }> {
    const res = await this.db.query<unknown[]>(
      `UPDATE verification_codes c
          SET attempts = c.attempts + CASE WHEN c.code_hash = $3 THEN 0 ELSE 1 END,
              consumed_time = CASE WHEN c.code_hash = $3 AND $4 THEN now() ELSE NULL END
        WHERE c.id = (SELECT id FROM verification_codes
                       WHERE channel = $1 AND target = $2 AND consumed_time IS NULL AND expires_time > $5
                       ORDER BY created_time DESC LIMIT 1)
          AND c.consumed_time IS NULL AND c.expires_time > $5 AND c.attempts < c.max_attempts
        RETURNING c.code_hash = $3 AS matched, c.max_attempts - c.attempts AS left`,
      [channel, target, codeHash, consume, now],
    );
    const row = ((Array.isArray(res[0]) ? res[0] : res) as { matched: boolean; left: number }[])[0];
    if (row) return { result: row.matched ? 'matched' : 'wrong', attemptsLeft: Number(row.left) };
    const live = await this.db.query<unknown[]>(
      `SELECT 1 FROM verification_codes WHERE channel = $1 AND target = $2 AND consumed_time IS NULL AND expires_time > $3 LIMIT 1`,
      [channel, target, now],
    );
    return { result: live.length ? 'exhausted' : 'none', attemptsLeft: 0 };
  }

  /** Codes are worthless a day after they were sent. One statement, not cut by DATABASE_STATEMENT_TIMEOUT_MS. */
  async sweep(): Promise<void> {
    await withoutStatementTimeout(this.db, (m) =>
      m.query(`DELETE FROM verification_codes WHERE created_time < now() - interval '1 day'`),
    );
  }
}
