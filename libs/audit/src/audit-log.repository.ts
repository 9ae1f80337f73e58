import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { returnedRows } from '@app/database';
import { AUDIT_LOG_OPTIONS, AuditLogOptions, auditTable } from './audit-options';

export interface AuditFilter {
  actorKind?: string;
  actorId?: string;
  /** Exact, or a prefix ending in `*` (`key.*`). */
  action?: string;
  targetType?: string;
  targetId?: string;
  from?: Date;
  to?: Date;
  /** Rows older (smaller id) than this one: the decoded cursor. */
  beforeId?: string;
}

export interface AuditRow {
  id: string;
  actor_kind: string;
  actor_id: string | null;
  action: string;
  target_type: string;
  target_id: string | null;
  before: unknown;
  after: unknown;
  request_id: string | null;
  address: string | null;
  created_at: Date;
}

/** Every read of the audit log and its retention sweep (the only DELETE); rows are written by AuditLog.record. */
@Injectable()
export class AuditLogRepository {
  private readonly table: string;

  constructor(
    @InjectDataSource() private readonly db: DataSource,
    @Inject(AUDIT_LOG_OPTIONS) options: AuditLogOptions,
  ) {
    this.table = auditTable(options);
  }

  /** Up to `limit` rows, newest first. */
  async page(filter: AuditFilter, limit: number): Promise<AuditRow[]> {
    const { where, params } = whereOf(filter);
    params.push(limit);
    return this.db.query<AuditRow[]>(
      `SELECT * FROM ${this.table} ${where} ORDER BY id DESC LIMIT $${params.length}`,
      params,
    );
  }

  /**
   * The id of the `n`-th newest matching row when a row older than it also matches (an export bounded
   * to `n` rows then answers where the next one starts), else null.
   */
  async boundary(filter: AuditFilter, n: number): Promise<string | null> {
    const { where, params } = whereOf(filter);
    params.push(n - 1);
    const rows = await this.db.query<Array<{ id: string }>>(
      `SELECT id FROM ${this.table} ${where} ORDER BY id DESC OFFSET $${params.length} LIMIT 2`,
      params,
    );
    return rows.length === 2 ? rows[0].id : null;
  }

  /** Deletes rows older than `cutoff` in batches; answers how many went. */
  async sweep(cutoff: Date, batch = 5000): Promise<number> {
    let total = 0;
    for (;;) {
      const n = await this.db.transaction(async (m) => {
        await m.query(`SET LOCAL audit.retention_sweep = 'on'`);
        const rows = returnedRows(
          await m.query(
            `DELETE FROM ${this.table} WHERE id IN (SELECT id FROM ${this.table} WHERE created_at < $1 ORDER BY id LIMIT $2) RETURNING id`,
            [cutoff, batch],
          ),
        );
        return rows.length;
      });
      total += n;
      if (n < batch) return total;
    }
  }
}

function whereOf(filter: AuditFilter): { where: string; params: unknown[] } {
  const clauses: string[] = [];
  const params: unknown[] = [];
  const add = (sql: string, value: unknown) => {
    params.push(value);
    clauses.push(sql.replace('?', `$${params.length}`));
  };
  if (filter.actorKind) add('actor_kind = ?', filter.actorKind);
  if (filter.actorId) add('actor_id = ?', filter.actorId);
  if (filter.action?.endsWith('*'))
    add(`action LIKE ? ESCAPE '\\'`, `${filter.action.slice(0, -1).replace(/[\\%_]/g, (c) => `\\${c}`)}%`);
  else if (filter.action) add('action = ?', filter.action);
  if (filter.targetType) add('target_type = ?', filter.targetType);
  if (filter.targetId) add('target_id = ?', filter.targetId);
  if (filter.from) add('created_at >= ?', filter.from);
  if (filter.to) add('created_at < ?', filter.to);
  if (filter.beforeId) add('id < ?::bigint', filter.beforeId);
  return { where: clauses.length ? `WHERE ${clauses.join(' AND ')}` : '', params };
}
