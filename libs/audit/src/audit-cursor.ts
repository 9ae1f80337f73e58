import type { AuditPosition } from './audit-log.repository';

/** A row's time as the page query answers it (audit-log.repository.ts): UTC to the microsecond. */
const AT = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3})\d{3}Z$/;

/**
 * The opaque cursor of an audit log page: the id and time of the last row answered, base64url-wrapped so a
 * client does not build one (the order of a page is not a contract).
 */
export function encodeAuditCursor(last: AuditPosition): string {
  return Buffer.from(JSON.stringify({ before: last.id, at: last.at })).toString('base64url');
}

/**
 * Where the next page starts, or null when the text is not a cursor this API gave out. A cursor from before
 * migration 1797060000000 has no time: it still answers (audit-log.repository.ts looks its row's time up).
 */
export function decodeAuditCursor(cursor: string): AuditPosition | null {
  try {
    const value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as Record<string, unknown> | null;
    const before = value?.before;
    if (typeof before !== 'string' || !/^[1-9][0-9]{0,18}$/.test(before)) return null;
    const at = value?.at;
    if (at === undefined) return { id: before, at: null };
    return typeof at === 'string' && isTime(at) ? { id: before, at } : null;
  } catch {
    return null;
  }
}

/** The shape above, and a day and time that exist (the database would refuse 2026-02-30 with a 500). */
function isTime(at: string): boolean {
  const ms = AT.exec(at)?.[1];
  return ms !== undefined && !Number.isNaN(Date.parse(`${ms}Z`)) && new Date(`${ms}Z`).toISOString() === `${ms}Z`;
}
