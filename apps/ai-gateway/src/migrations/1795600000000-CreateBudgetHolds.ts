import { MigrationInterface, QueryRunner } from 'typeorm';

/** One row per budget reservation in flight, so holds left by a crashed process expire. */
export class CreateBudgetHolds1795600000000 implements MigrationInterface {
  name = 'CreateBudgetHolds1795600000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE ai_budget_holds (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        key_id uuid NOT NULL REFERENCES ai_api_keys(id) ON DELETE CASCADE,
        amount numeric(20, 10) NOT NULL CHECK (amount >= 0),
        expires_at timestamptz NOT NULL
      )`);
    await q.query(`CREATE INDEX ix_ai_budget_holds_expires ON ai_budget_holds (expires_at)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE ai_budget_holds`);
  }
}
