/** How an app keeps its audit log: both apps share one database, so each names its own table. */
export interface AuditLogOptions {
  /** `audit_log` (membership), `ai_audit_log` (gateway). */
  table: string;
}

export const AUDIT_LOG_OPTIONS = Symbol('AUDIT_LOG_OPTIONS');

const TABLE_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/** The table name, checked once: it is spliced into SQL. */
export function auditTable(options: AuditLogOptions): string {
  if (!TABLE_NAME.test(options.table))
    throw new Error(`audit log table name ${options.table} is not a plain identifier`);
  return options.table;
}
