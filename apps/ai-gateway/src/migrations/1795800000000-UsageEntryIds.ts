import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Each ledger entry carries an id made when the call settles, unique in the table: a batch whose
 * commit was not acknowledged (connection cut after COMMIT) is written again, and the rows that
 * already made it are skipped instead of doubled (test/ai-gateway/ledger-lost-commit.e2e-spec.ts). Older rows keep NULL.
 */
export class UsageEntryIds1795800000000 implements MigrationInterface {
  name = 'UsageEntryIds1795800000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE ai_usage_records ADD COLUMN entry_id uuid`);
    await q.query(`CREATE UNIQUE INDEX uq_ai_usage_records_entry ON ai_usage_records (entry_id)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX uq_ai_usage_records_entry`);
    await q.query(`ALTER TABLE ai_usage_records DROP COLUMN entry_id`);
  }
}
