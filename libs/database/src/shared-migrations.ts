import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Tables both apps use (short-lived shared state when Redis is not configured). Idempotent because
 * each app runs it from its own migrations history against the same database.
 */
export class SharedState1732240000000 implements MigrationInterface {
  name = 'SharedState1732240000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE IF NOT EXISTS shared_state (
      key text PRIMARY KEY,
      value text NOT NULL,
      expires_at timestamptz NOT NULL
    )`);
    await q.query(`CREATE INDEX IF NOT EXISTS shared_state_expires_at ON shared_state (expires_at)`);
  }

  async down(): Promise<void> {
    // Shared with the other app: left in place.
  }
}
