import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The usage ledger summed per key, UTC hour, endpoint and model. Usage reports read it instead of
 * grouping every ledger row of the range: a key's /v1/usage over a year costs at most one row per hour,
 * endpoint and model it used, not one per call. A statement trigger keeps it: every insert into the
 * ledger adds its new rows (a retried batch's rows that already existed are not new), whichever code
 * wrote them — replicas older than this migration during a rolling deploy included. Filled from the
 * existing ledger here, in the transaction that creates the trigger.
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
    await q.query(
      `CREATE UNIQUE INDEX ux_ai_usage_hourly ON ai_usage_hourly ((coalesce(key_id, '00000000-0000-0000-0000-000000000000'::uuid)), hour, endpoint, model)`,
    );
    // A key's report (the common one) reads its own rows only; the admin report of all keys, a range of hours.
    await q.query(`CREATE INDEX ix_ai_usage_hourly_key_hour ON ai_usage_hourly (key_id, hour)`);
    await q.query(`CREATE INDEX ix_ai_usage_hourly_hour ON ai_usage_hourly (hour)`);
    // Rows in key order: two concurrent inserts lock the totals they share in the same order.
    await q.query(`
      CREATE FUNCTION ai_usage_hourly_add() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        INSERT INTO ai_usage_hourly AS h
        SELECT key_id, date_trunc('hour', created_at, 'UTC'), endpoint, model, count(*), count(*) FILTER (WHERE status = 'failed'),
               sum(prompt_tokens), sum(completion_tokens), sum(seconds), sum(characters), sum(images), sum(cost_yuan)
          FROM new_rows GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4
        ON CONFLICT ((coalesce(key_id, '00000000-0000-0000-0000-000000000000'::uuid)), hour, endpoint, model) DO UPDATE SET
          requests = h.requests + EXCLUDED.requests, failed = h.failed + EXCLUDED.failed,
          prompt_tokens = h.prompt_tokens + EXCLUDED.prompt_tokens, completion_tokens = h.completion_tokens + EXCLUDED.completion_tokens,
          seconds = h.seconds + EXCLUDED.seconds, characters = h.characters + EXCLUDED.characters, images = h.images + EXCLUDED.images,
          cost_yuan = h.cost_yuan + EXCLUDED.cost_yuan;
        RETURN NULL;
      END $$`);
    await q.query(
      `CREATE TRIGGER ai_usage_hourly_add AFTER INSERT ON ai_usage_records REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION ai_usage_hourly_add()`,
    );
    await q.query(`
      INSERT INTO ai_usage_hourly
      SELECT key_id, date_trunc('hour', created_at, 'UTC'), endpoint, model, count(*), count(*) FILTER (WHERE status = 'failed'),
             sum(prompt_tokens), sum(completion_tokens), sum(seconds), sum(characters), sum(images), sum(cost_yuan)
        FROM ai_usage_records GROUP BY 1, 2, 3, 4`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TRIGGER ai_usage_hourly_add ON ai_usage_records`);
    await q.query(`DROP FUNCTION ai_usage_hourly_add()`);
    await q.query(`DROP TABLE ai_usage_hourly`);
  }
}
