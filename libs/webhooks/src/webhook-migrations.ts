import type { QueryRunner } from 'typeorm';
import { webhookTables } from './webhook-options';

/**
 * The webhook tables of one app and its enqueue function. `<prefix>webhook_enqueue(type, data, at)`
 * writes the event and one delivery per enabled endpoint subscribed to it, in the caller's transaction:
 * SQL callers (the gateway's ai_limits_settle) and WebhookOutbox share it. The unique (event, endpoint)
 * pair is the single attempt stream per event and endpoint; the lease columns let exactly one replica
 * hold it at a time (webhook-deliveries.repository.ts).
 */
export async function createWebhookTables(q: QueryRunner, prefix: string): Promise<void> {
  const t = webhookTables(prefix);
  await q.query(`
    CREATE TABLE ${t.endpoints} (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      url varchar(2000) NOT NULL,
      description varchar(200) NOT NULL DEFAULT '',
      events text[],
      secret_sealed text NOT NULL,
      enabled boolean NOT NULL DEFAULT true,
      disabled_reason varchar(500),
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    )`);
  await q.query(`
    CREATE TABLE ${t.events} (
      id varchar(40) PRIMARY KEY,
      type varchar(100) NOT NULL,
      payload jsonb NOT NULL,
      created_at timestamptz NOT NULL
    )`);
  await q.query(`CREATE INDEX idx_${t.events}_created ON ${t.events} (created_at)`);
  await q.query(`
    CREATE TABLE ${t.deliveries} (
      id bigserial PRIMARY KEY,
      event_id varchar(40) NOT NULL REFERENCES ${t.events}(id) ON DELETE CASCADE,
      endpoint_id uuid NOT NULL REFERENCES ${t.endpoints}(id) ON DELETE CASCADE,
      status varchar(16) NOT NULL DEFAULT 'pending',
      attempts int NOT NULL DEFAULT 0,
      next_attempt_at timestamptz NOT NULL,
      give_up_at timestamptz,
      lease_until timestamptz,
      lease_token uuid,
      last_status int,
      last_error varchar(500),
      last_attempt_at timestamptz,
      delivered_at timestamptz,
      created_at timestamptz NOT NULL,
      UNIQUE (event_id, endpoint_id)
    )`);
  await q.query(`CREATE INDEX idx_${t.deliveries}_due ON ${t.deliveries} (next_attempt_at) WHERE status = 'pending'`);
  await q.query(`CREATE INDEX idx_${t.deliveries}_endpoint ON ${t.deliveries} (endpoint_id, id DESC)`);
  await q.query(`
    CREATE TABLE ${t.attempts} (
      id bigserial PRIMARY KEY,
      delivery_id bigint NOT NULL REFERENCES ${t.deliveries}(id) ON DELETE CASCADE,
      attempt int NOT NULL,
      replica varchar(100) NOT NULL,
      started_at timestamptz NOT NULL,
      duration_ms int NOT NULL,
      status int,
      error varchar(500)
    )`);
  await q.query(`CREATE INDEX idx_${t.attempts}_delivery ON ${t.attempts} (delivery_id, id)`);
  await q.query(`
    CREATE FUNCTION ${t.enqueue}(p_type text, p_data jsonb, p_at timestamptz DEFAULT now()) RETURNS text
    LANGUAGE plpgsql AS $$
    DECLARE
      v_id text;
    BEGIN
      IF NOT EXISTS (SELECT 1 FROM ${t.endpoints} WHERE enabled AND (events IS NULL OR p_type = ANY(events))) THEN
        RETURN NULL;
      END IF;
      v_id := 'msg_' || replace(gen_random_uuid()::text, '-', '');
      INSERT INTO ${t.events} (id, type, payload, created_at)
      VALUES (v_id, p_type,
              jsonb_build_object('type', p_type,
                                 'timestamp', to_char(p_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                                 'data', p_data),
              p_at);
      INSERT INTO ${t.deliveries} (event_id, endpoint_id, next_attempt_at, created_at)
      SELECT v_id, id, p_at, p_at FROM ${t.endpoints} WHERE enabled AND (events IS NULL OR p_type = ANY(events));
      RETURN v_id;
    END $$`);
}

export async function dropWebhookTables(q: QueryRunner, prefix: string): Promise<void> {
  const t = webhookTables(prefix);
  await q.query(`DROP FUNCTION ${t.enqueue}(text, jsonb, timestamptz)`);
  await q.query(`DROP TABLE ${t.attempts}`);
  await q.query(`DROP TABLE ${t.deliveries}`);
  await q.query(`DROP TABLE ${t.events}`);
  await q.query(`DROP TABLE ${t.endpoints}`);
}

/**
 * Deliveries of a disabled endpoint leave the due set, and the due set is read per endpoint.
 *
 * Before: a disabled endpoint's pending deliveries (everything queued when the worker gave up on it, or when an
 * admin disabled it) stayed `pending` in the due index `(next_attempt_at) WHERE status = 'pending'`, oldest
 * first, and every claim walked past them to the enabled endpoints' rows; and a claim took the oldest due rows
 * whoever's they were, so one endpoint with a backlog filled whole batches.
 *
 * Now: disabling an endpoint moves its pending deliveries to `paused` (out of the due set; enabling it again
 * makes them `pending`), done here for the endpoints disabled already; the due index is per endpoint,
 * `(endpoint_id, next_attempt_at, id) WHERE status = 'pending'`, so a claim takes each endpoint's oldest due
 * rows in turn (webhook-deliveries.repository.ts `claim`).
 */
export async function pauseDisabledWebhookDeliveries(q: QueryRunner, prefix: string): Promise<void> {
  const t = webhookTables(prefix);
  await q.query(
    `CREATE INDEX idx_${t.deliveries}_due_endpoint ON ${t.deliveries} (endpoint_id, next_attempt_at, id) WHERE status = 'pending'`,
  );
  await q.query(`DROP INDEX idx_${t.deliveries}_due`);
  await q.query(
    `UPDATE ${t.deliveries} SET status = 'paused'
      WHERE status = 'pending' AND endpoint_id IN (SELECT id FROM ${t.endpoints} WHERE NOT enabled)`,
  );
}

export async function unpauseDisabledWebhookDeliveries(q: QueryRunner, prefix: string): Promise<void> {
  const t = webhookTables(prefix);
  await q.query(`UPDATE ${t.deliveries} SET status = 'pending' WHERE status = 'paused'`);
  await q.query(`CREATE INDEX idx_${t.deliveries}_due ON ${t.deliveries} (next_attempt_at) WHERE status = 'pending'`);
  await q.query(`DROP INDEX idx_${t.deliveries}_due_endpoint`);
}

/**
 * Pausing follows the endpoint's flag whoever writes it: a trigger on `enabled` pauses the endpoint's pending
 * deliveries when it goes off and makes its paused ones pending when it comes on, in the writer's transaction.
 *
 * Before: the use cases paused and resumed (webhook-endpoints.repository.ts update), so a replica still running
 * code from before 1796950000000 (a rolling deploy) that enabled an endpoint flipped the flag alone, and its
 * deliveries stayed paused for ever. Such a replica restarts the retry window of the pending ones next, which
 * now include these; this code does the same (a window needs WEBHOOK_RETRY_HOURS, which the database lacks).
 */
export async function createWebhookPauseTrigger(q: QueryRunner, prefix: string): Promise<void> {
  const t = webhookTables(prefix);
  await q.query(`
    CREATE FUNCTION ${t.endpoints}_paused() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF NEW.enabled THEN
        UPDATE ${t.deliveries} SET status = 'pending' WHERE endpoint_id = NEW.id AND status = 'paused';
      ELSE
        UPDATE ${t.deliveries} SET status = 'paused' WHERE endpoint_id = NEW.id AND status = 'pending';
      END IF;
      RETURN NULL;
    END $$`);
  await q.query(
    `CREATE TRIGGER ${t.endpoints}_paused AFTER UPDATE OF enabled ON ${t.endpoints}
       FOR EACH ROW WHEN (OLD.enabled IS DISTINCT FROM NEW.enabled) EXECUTE FUNCTION ${t.endpoints}_paused()`,
  );
  // Endpoints an old replica enabled already.
  await q.query(
    `UPDATE ${t.deliveries} SET status = 'pending'
      WHERE status = 'paused' AND endpoint_id IN (SELECT id FROM ${t.endpoints} WHERE enabled)`,
  );
}

export async function dropWebhookPauseTrigger(q: QueryRunner, prefix: string): Promise<void> {
  const t = webhookTables(prefix);
  await q.query(`DROP TRIGGER ${t.endpoints}_paused ON ${t.endpoints}`);
  await q.query(`DROP FUNCTION ${t.endpoints}_paused()`);
}
