import type { QueryRunner } from 'typeorm';

/**
 * The audit log table of one app, append-only in the database itself: a trigger refuses every UPDATE,
 * and every DELETE unless the transaction set `audit.retention_sweep` (only audit-log.repository.ts
 * `sweep` does). Newest-first pages and filters read by id (audit-log.repository.ts); migrations 1797020000000
 * and 1797060000000 replace the filter and time indexes made here (`createAuditLogFilterIndexes`,
 * `createAuditLogTimeIndex`).
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

/** An index of the audit table: its name's suffix, its columns, and a predicate for a partial index. */
type AuditIndex = [suffix: string, columns: string, where?: string];

/**
 * The read indexes from migration 1797020000000 on: one per filter of audit-log.repository.ts `whereOf`, each
 * followed by `id DESC`, the order of a page and of its cursor (`id < before`), so a filter on any one column
 * walks its index newest first and stops at the page's size; a filter on several takes the most selective one
 * and checks the others on the rows it reads. The action's operator class answers `=` and the `key.*` prefix
 * (`LIKE 'key.%'`) whatever the database's collation, where a default one answers the prefix only under "C".
 * Replaces the first indexes (`createAuditLogTable`), which led with actor_kind and target_type, so that
 * actor_id or target_id alone could use none of them.
 */
const FILTER_INDEXES: AuditIndex[] = [
  ['actor_kind', 'actor_kind, id DESC'],
  ['actor_id', 'actor_id, id DESC', 'actor_id IS NOT NULL'],
  ['action_pattern', 'action varchar_pattern_ops, id DESC'],
  ['target_type', 'target_type, id DESC'],
  ['target_id', 'target_id, id DESC', 'target_id IS NOT NULL'],
];
const FIRST_INDEXES: AuditIndex[] = [
  ['action', 'action, id DESC'],
  ['target', 'target_type, target_id, id DESC'],
  ['actor', 'actor_kind, actor_id, id DESC'],
];

const indexSql = (table: string, [suffix, columns, where]: AuditIndex, how: string) =>
  `CREATE INDEX ${how} idx_${table}_${suffix} ON ${table} (${columns})${where ? ` WHERE ${where}` : ''}`;

/**
 * Builds the filter indexes without blocking the app's writes (`CONCURRENTLY`), so its migration runs outside a
 * transaction (`transaction = false`, which TypeORM honours in the `each` mode every runner here uses:
 * libs/database/src/database.module.ts, scripts/migration.js). A run that stopped half-way is not recorded and
 * runs again: each index is dropped first, as an interrupted build leaves an invalid one that `IF NOT EXISTS` keeps.
 */
export async function createAuditLogFilterIndexes(q: QueryRunner, table: string): Promise<void> {
  for (const index of FILTER_INDEXES) {
    await q.query(`DROP INDEX CONCURRENTLY IF EXISTS idx_${table}_${index[0]}`);
    await q.query(indexSql(table, index, 'CONCURRENTLY'));
  }
  for (const [suffix] of FIRST_INDEXES) await q.query(`DROP INDEX CONCURRENTLY IF EXISTS idx_${table}_${suffix}`);
}

/** The way back, in the transaction TypeORM's revert always opens (it cannot build concurrently). */
export async function dropAuditLogFilterIndexes(q: QueryRunner, table: string): Promise<void> {
  for (const index of FIRST_INDEXES) await q.query(indexSql(table, index, 'IF NOT EXISTS'));
  for (const [suffix] of FILTER_INDEXES) await q.query(`DROP INDEX IF EXISTS idx_${table}_${suffix}`);
}

/**
 * The time index from migration 1797060000000: `(created_at, id)`, read backwards by a page with a time bound,
 * whose order is `created_at DESC, id DESC` with a cursor on both (audit-log.repository.ts `page`), so `from`/`to`
 * are a range of it and a page stops at its size. Before, pages with a time bound went by id through the primary
 * key and checked the time on every row, so a `to` far in the past read every newer row. Replaces the index on
 * `created_at` alone (`createAuditLogTable`), which the retention sweep's `created_at <` reads as well from this.
 * Built concurrently, outside a transaction, as `createAuditLogFilterIndexes` is.
 */
export async function createAuditLogTimeIndex(q: QueryRunner, table: string): Promise<void> {
  await q.query(`DROP INDEX CONCURRENTLY IF EXISTS idx_${table}_created_id`);
  await q.query(`CREATE INDEX CONCURRENTLY idx_${table}_created_id ON ${table} (created_at, id)`);
  await q.query(`DROP INDEX CONCURRENTLY IF EXISTS idx_${table}_created`);
}

/** The way back, in the transaction TypeORM's revert always opens. */
export async function dropAuditLogTimeIndex(q: QueryRunner, table: string): Promise<void> {
  await q.query(`CREATE INDEX IF NOT EXISTS idx_${table}_created ON ${table} (created_at)`);
  await q.query(`DROP INDEX IF EXISTS idx_${table}_created_id`);
}
