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

/**
 * `shared_state` holds only short-lived, re-creatable values (rate-limit counters, one-time states,
 * caches): UNLOGGED skips the WAL, so a counter update on every request no longer waits for a disk
 * flush nor queues behind other requests' row locks. A crash empties the table
 * (a clean restart keeps it), and it is not copied to streaming replicas.
 */
export class SharedStateUnlogged1795500000000 implements MigrationInterface {
  name = 'SharedStateUnlogged1795500000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE IF EXISTS shared_state SET UNLOGGED`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE IF EXISTS shared_state SET LOGGED`);
  }
}
