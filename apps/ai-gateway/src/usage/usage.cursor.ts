import type { UsageLineKey } from './usage.repository';

const DATE = /^\d{4}-\d{2}-\d{2}(T\d{2}:00)?$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** The ledger's endpoint and model columns are at most 64 and 128 characters (usage-record.entity.ts). */
const MAX_NAME = 128;

/**
 * The opaque cursor of the admin usage report: the last line answered (its period and what it sums over, as
 * the lines sort in usage.repository.ts), base64url-wrapped so a client does not build one.
 */
export function encodeUsageCursor(line: UsageLineKey): string {
  const { date, keyId, projectId, endpoint, model } = line;
  return Buffer.from(JSON.stringify([date, keyId, projectId, endpoint, model])).toString('base64url');
}

/** The line the next page starts after, or null when the text is not a cursor this API gave out. */
export function decodeUsageCursor(cursor: string): UsageLineKey | null {
  try {
    const v: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (!Array.isArray(v) || v.length !== 5) return null;
    const [date, keyId, projectId, endpoint, model] = v as unknown[];
    const id = (x: unknown) => x === null || (typeof x === 'string' && UUID.test(x));
    // PostgreSQL text holds no NUL: one would fail the query rather than match nothing.
    const name = (x: unknown) => x === null || (typeof x === 'string' && x.length <= MAX_NAME && !x.includes('\0'));
    if (typeof date !== 'string' || !DATE.test(date) || !id(keyId) || !id(projectId)) return null;
    if (!name(endpoint) || !name(model)) return null;
    return { date, keyId, projectId, endpoint, model } as UsageLineKey;
  } catch {
    return null;
  }
}
