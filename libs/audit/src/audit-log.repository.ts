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
  /** Rows after this one in page order: the decoded cursor's id. */
  beforeId?: string;
  /** That row's time (AuditPosition.at); looked up by its id when absent (a cursor from before 1797060000000). */
  beforeAt?: string;
}

/** A row's place in page order: its id, and its time to the microsecond as text (a Date drops microseconds). */
export interface AuditPosition {
  id: string;
  at: string | null;
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
  /** created_at as AuditPosition.at. */
  position_at: string;
}

/** created_at in UTC to the microsecond, as a cursor carries it. */
const POSITION_AT = `to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

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

  /**
   * Up to `limit` rows, newest first: by id, or with a time bound by time (`created_at`, then id), which the time
   * index answers as a range (migration 1797060000000). By id, a `to` far in the past read every newer row through
   * the primary key before its page; ids do not follow times closely enough to stand in for them (a row's time is
   * its replica's clock when its transaction recorded it, its id when it inserted).
   */
  async page(filter: AuditFilter, limit: number): Promise<AuditRow[]> {
    const { where, order, params } = this.queryOf(filter);
    params.push(limit);
    return this.db.query<AuditRow[]>(
      `SELECT *, ${POSITION_AT} AS position_at FROM ${this.table} ${where} ORDER BY ${order} LIMIT $${params.length}`,
      params,
    );
  }

  /**
   * The position of the `n`-th newest matching row when a row older than it also matches (an export bounded
   * to `n` rows then answers where the next one starts), else null.
   */
  async boundary(filter: AuditFilter, n: number): Promise<AuditPosition | null> {
    const { where, order, params } = this.queryOf(filter);
    params.push(n - 1);
    const rows = await this.db.query<Array<{ id: string; at: string }>>(
      `SELECT id, ${POSITION_AT} AS at FROM ${this.table} ${where} ORDER BY ${order} OFFSET $${params.length} LIMIT 2`,
      params,
    );
    return rows.length === 2 ? { id: String(rows[0].id), at: rows[0].at } : null;
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

  /** The filter's clauses and the page order; the cursor's clause in that order. */
  private queryOf(filter: AuditFilter): { where: string; order: string; params: unknown[] } {
    const byTime = Boolean(filter.from || filter.to);
    const { clauses, params } = filterClauses(filter);
    if (filter.beforeId) {
      params.push(filter.beforeId);
      const id = `$${params.length}::bigint`;
      if (!byTime) clauses.push(`id < ${id}`);
      else if (filter.beforeAt) {
        params.push(filter.beforeAt);
        clauses.push(`(created_at, id) < ($${params.length}::timestamptz, ${id})`);
      } else clauses.push(`(created_at, id) < ((SELECT created_at FROM ${this.table} WHERE id = ${id}), ${id})`);
    }
    return {
      where: clauses.length ? `WHERE ${clauses.join(' AND ')}` : '',
      order: byTime ? 'created_at DESC, id DESC' : 'id DESC',
      params,
    };
  }
}

function filterClauses(filter: AuditFilter): { clauses: string[]; params: unknown[] } {
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
  return { clauses, params };
}
