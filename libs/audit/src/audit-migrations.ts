import type { QueryRunner } from 'typeorm';

/**
 * The audit log table of one app, append-only in the database itself: a trigger refuses every UPDATE,
 * and every DELETE unless the transaction set `audit.retention_sweep` (only audit-log.repository.ts
 * `sweep` does). Newest-first pages and filters read by id (audit-log.repository.ts).
 */
export async function createAuditLogTable(q: QueryRunner, table: string): Promise<void> {
  await q.query(`
    CREATE TABLE ${table} (
      id bigserial PRIMARY KEY,
      actor_kind varchar(16) NOT NULL,
      actor_id varchar(100),
      action varchar(100) NOT NULL,
      target_type varchar(50) NOT NULL,
      target_id varchar(100),
      before jsonb,
      after jsonb,
      request_id varchar(128),
      address varchar(64),
      created_at timestamptz NOT NULL DEFAULT now()
    )`);
  await q.query(`CREATE INDEX idx_${table}_created ON ${table} (created_at)`);
  await q.query(`CREATE INDEX idx_${table}_action ON ${table} (action, id DESC)`);
  await q.query(`CREATE INDEX idx_${table}_target ON ${table} (target_type, target_id, id DESC)`);
  await q.query(`CREATE INDEX idx_${table}_actor ON ${table} (actor_kind, actor_id, id DESC)`);
  await q.query(`
    CREATE FUNCTION ${table}_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP = 'DELETE' AND current_setting('audit.retention_sweep', true) = 'on' THEN
        RETURN OLD;
      END IF;
      RAISE EXCEPTION 'the audit log is append-only (%)', TG_OP USING ERRCODE = 'insufficient_privilege';
    END $$`);
  await q.query(
    `CREATE TRIGGER ${table}_append_only BEFORE UPDATE OR DELETE ON ${table} FOR EACH ROW EXECUTE FUNCTION ${table}_append_only()`,
  );
}

export async function dropAuditLogTable(q: QueryRunner, table: string): Promise<void> {
  await q.query(`DROP TABLE ${table}`);
  await q.query(`DROP FUNCTION ${table}_append_only()`);
}
