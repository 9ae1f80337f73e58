import type { AuditLogEntryView } from './audit-log.dto';

const COLUMNS = [
  'id',
  'time',
  'actor_kind',
  'actor_id',
  'action',
  'target_type',
  'target_id',
  'request_id',
  'address',
  'before',
  'after',
];

export function csvHeader(): string {
  return `${COLUMNS.join(',')}\r\n`;
}

/** One RFC 4180 line; `before`/`after` as JSON text. */
export function csvLine(v: AuditLogEntryView): string {
  const cells = [
    v.id,
    v.time,
    v.actor.kind,
    v.actor.id,
    v.action,
    v.target.type,
    v.target.id,
    v.request_id,
    v.address,
    json(v.before),
    json(v.after),
  ];
  return `${cells.map(cell).join(',')}\r\n`;
}

function json(value: unknown): string | null {
  return value === null || value === undefined ? null : JSON.stringify(value);
}

/**
 * Quoted when needed; a cell a spreadsheet would run as a formula (= + - @ or a control character
 * first) gets a leading apostrophe, since a member's chosen name can reach `before`/`after`.
 */
function cell(value: string | null): string {
  if (value === null) return '';
  const safe = /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
  return /[",\r\n]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
}
