import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The usage ledger summed per key, UTC hour, endpoint and model, kept by the ledger writer in the
 * statement that inserts the entries (usage/ledger.writer.ts). Usage reports read it instead of
 * grouping every ledger row of the range: a key's /v1/usage over a year costs at most one row per
 * hour, endpoint and model it used, not one per call. Filled from the existing ledger here.
 */
export class UsageHourly1796100000000 implements MigrationInterface {
  name = 'UsageHourly1796100000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE ai_usage_hourly (
        key_id uuid,
        hour timestamptz NOT NULL,
        endpoint varchar(64) NOT NULL,
        model varchar(128) NOT NULL,
        requests int NOT NULL,
        failed int NOT NULL,
        prompt_tokens bigint NOT NULL,
        completion_tokens bigint NOT NULL,
        seconds numeric(20, 3) NOT NULL,
        characters bigint NOT NULL,
        images bigint NOT NULL,
        cost_yuan numeric(24, 10) NOT NULL
      )`);
    // Entries without a key (none today) share the all-zero id, so one unique index covers every row.
    await q.query(`CREATE UNIQUE INDEX ux_ai_usage_hourly ON ai_usage_hourly ((coalesce(key_id, '00000000-0000-0000-0000-000000000000'::uuid)), hour, endpoint, model)`);
    await q.query(`CREATE INDEX ix_ai_usage_hourly_hour ON ai_usage_hourly (hour)`);
    await q.query(`
      INSERT INTO ai_usage_hourly
      SELECT key_id, date_trunc('hour', created_at, 'UTC'), endpoint, model, count(*), count(*) FILTER (WHERE status = 'failed'),
             sum(prompt_tokens), sum(completion_tokens), sum(seconds), sum(characters), sum(images), sum(cost_yuan)
        FROM ai_usage_records GROUP BY 1, 2, 3, 4`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE ai_usage_hourly`);
  }
}
