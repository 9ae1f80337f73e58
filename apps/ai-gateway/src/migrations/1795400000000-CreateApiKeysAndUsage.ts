import { MigrationInterface, QueryRunner } from 'typeorm';

/** API keys (hashed, scoped, with budgets and reservations) and the usage ledger. */
export class CreateApiKeysAndUsage1795400000000 implements MigrationInterface {
  name = 'CreateApiKeysAndUsage1795400000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE EXTENSION IF NOT EXISTS pgcrypto`);
    await q.query(`
      CREATE TABLE ai_api_keys (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        name varchar(100) NOT NULL,
        prefix varchar(32) NOT NULL,
        key_hash char(64) NOT NULL,
        scopes text[],
        models text[],
        requests_per_minute int CHECK (requests_per_minute > 0),
        budget_yuan numeric(20, 10) CHECK (budget_yuan >= 0),
        spent_yuan numeric(20, 10) NOT NULL DEFAULT 0,
        reserved_yuan numeric(20, 10) NOT NULL DEFAULT 0 CHECK (reserved_yuan >= 0),
        expires_at timestamptz,
        revoked_at timestamptz,
        last_used_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE UNIQUE INDEX uq_ai_api_keys_hash ON ai_api_keys (key_hash)`);
    await q.query(`
      CREATE TABLE ai_usage_records (
        id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        key_id uuid REFERENCES ai_api_keys(id) ON DELETE SET NULL,
        endpoint varchar(64) NOT NULL,
        model varchar(128) NOT NULL,
        provider varchar(128),
        prompt_tokens int NOT NULL DEFAULT 0,
        completion_tokens int NOT NULL DEFAULT 0,
        seconds numeric(12, 3) NOT NULL DEFAULT 0,
        characters int NOT NULL DEFAULT 0,
        images int NOT NULL DEFAULT 0,
        calls int NOT NULL DEFAULT 1,
        cost_yuan numeric(20, 10) NOT NULL DEFAULT 0,
        status varchar(16) NOT NULL CHECK (status IN ('ok', 'failed', 'aborted', 'cached')),
        http_status int,
        error varchar(500),
        latency_ms int NOT NULL DEFAULT 0,
        request_id varchar(128),
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX ix_ai_usage_records_key_time ON ai_usage_records (key_id, created_at)`);
    await q.query(`CREATE INDEX ix_ai_usage_records_time ON ai_usage_records (created_at)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE ai_usage_records`);
    await q.query(`DROP TABLE ai_api_keys`);
  }
}
