/**
 * The opaque cursor of an audit log page: the id of the last row answered, base64url-wrapped so a
 * client does not build one (the order of ids is not a contract).
 */
export function encodeAuditCursor(lastId: string): string {
  return Buffer.from(JSON.stringify({ before: lastId })).toString('base64url');
}

/** The id rows must be older than, or null when the text is not a cursor this API gave out. */
export function decodeAuditCursor(cursor: string): string | null {
  try {
    const value: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    const before = (value as { before?: unknown } | null)?.before;
    return typeof before === 'string' && /^[1-9][0-9]{0,18}$/.test(before) ? before : null;
  } catch {
    return null;
  }
}
