import { Injectable } from '@nestjs/common';
import { BaseConfig } from '@app/platform';
import { decodeAuditCursor, encodeAuditCursor } from './audit-cursor';
import { AuditFilter, AuditLogRepository, AuditPosition, AuditRow } from './audit-log.repository';
import type { AuditLogEntryView, AuditLogFilterQuery, AuditLogPage } from './audit-log.dto';
import { csvHeader, csvLine } from './audit-export';

const EXPORT_PAGE = 500;

/** An export: its lines, produced page by page as the response is written, and where the next export starts. */
export interface AuditExport {
  contentType: string;
  filename: string;
  nextCursor: string | null;
  lines: AsyncIterable<string>;
}

/** Reads the audit log for the admin APIs of both apps: pages newest first, and bounded exports. */
@Injectable()
export class AuditLogReader {
  constructor(
    private readonly rows: AuditLogRepository,
    private readonly config: BaseConfig,
  ) {}

  async list(query: AuditLogFilterQuery, limit: number): Promise<AuditLogPage> {
    const rows = await this.rows.page(filterOf(query), limit + 1);
    const more = rows.length > limit;
    const data = rows.slice(0, limit).map(toView);
    return { data, next_cursor: more ? encodeAuditCursor(positionOf(rows[limit - 1])) : null };
  }

  async export(query: AuditLogFilterQuery, format: 'csv' | 'ndjson'): Promise<AuditExport> {
    const filter = filterOf(query);
    const max = this.config.AUDIT_EXPORT_MAX_ROWS;
    const last = await this.rows.boundary(filter, max);
    const stamp = new Date().toISOString().replace(/[:.]/g, '-');
    return {
      contentType: format === 'csv' ? 'text/csv; charset=utf-8' : 'application/x-ndjson; charset=utf-8',
      filename: `audit-log-${stamp}.${format === 'csv' ? 'csv' : 'ndjson'}`,
      nextCursor: last ? encodeAuditCursor(last) : null,
      lines: this.lines(filter, max, format),
    };
  }

  private async *lines(filter: AuditFilter, max: number, format: 'csv' | 'ndjson'): AsyncIterable<string> {
    if (format === 'csv') yield csvHeader();
    let left = max;
    let after = filter;
    while (left > 0) {
      const rows = await this.rows.page(after, Math.min(EXPORT_PAGE, left));
      for (const row of rows) {
        const view = toView(row);
        yield format === 'csv' ? csvLine(view) : `${JSON.stringify(view)}\n`;
      }
      if (rows.length < Math.min(EXPORT_PAGE, left)) return;
      left -= rows.length;
      const last = positionOf(rows[rows.length - 1]);
      after = { ...filter, beforeId: last.id, beforeAt: last.at ?? undefined };
    }
  }
}

function filterOf(q: AuditLogFilterQuery): AuditFilter {
  const before = q.cursor ? decodeAuditCursor(q.cursor) : null;
  return {
    actorKind: q.actor_kind,
    actorId: q.actor_id,
    action: q.action,
    targetType: q.target_type,
    targetId: q.target_id,
    from: q.from ? new Date(q.from) : undefined,
    to: q.to ? new Date(q.to) : undefined,
    beforeId: before?.id,
    beforeAt: before?.at ?? undefined,
  };
}

function positionOf(r: AuditRow): AuditPosition {
  return { id: String(r.id), at: r.position_at };
}

export function toView(r: AuditRow): AuditLogEntryView {
  return {
    id: String(r.id),
    time: new Date(r.created_at).toISOString(),
    actor: { kind: r.actor_kind, id: r.actor_id },
    action: r.action,
    target: { type: r.target_type, id: r.target_id },
    before: r.before ?? null,
    after: r.after ?? null,
    request_id: r.request_id,
    address: r.address,
  };
}
