/**
 * The opaque cursor of a key's calls: the settle time (microseconds, as PostgreSQL keeps it: a JavaScript Date
 * would round it and skip or repeat rows) and id of the last row answered, base64url-wrapped.
 */
export interface CallsCursor {
  at: string;
  id: string;
}

const AT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;

export function encodeCallsCursor(c: CallsCursor): string {
  return Buffer.from(JSON.stringify(c)).toString('base64url');
}

/** The position rows must be older than, or null when the text is not a cursor this API gave out. */
export function decodeCallsCursor(cursor: string): CallsCursor | null {
  try {
    const v = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as Partial<CallsCursor> | null;
    if (typeof v?.at !== 'string' || !AT.test(v.at) || Number.isNaN(Date.parse(v.at))) return null;
    if (typeof v.id !== 'string' || !/^[1-9][0-9]{0,18}$/.test(v.id)) return null;
    return { at: v.at, id: v.id };
  } catch {
    return null;
  }
}
