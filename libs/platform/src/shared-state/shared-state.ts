/**
 * Short-lived state every replica must see the same way (rate-limit counters, one-time states,
 * caches). Redis when REDIS_URL is set, otherwise a PostgreSQL table; every entry expires.
 */
/** What a rate-limit hit answers (SharedState.hit). */
export type HitAnswer = { blockedMs: number; count: number; ttlMs: number };

export abstract class SharedState {
  abstract get(key: string): Promise<string | null>;
  abstract set(key: string, value: string, ttlMs: number): Promise<void>;
  /** The live values of `keys`, in their order (null where absent), in one round trip (none for no keys). */
  abstract getMany(keys: string[]): Promise<(string | null)[]>;
  /**
   * Stores `entries` in one round trip, all or none, only while the bytes counted on `budgetKey`
   * stay within `maxBytes`: the entries' bytes (keys and values, UTF-8) are added to that counter,
   * which starts with a lifetime of `ttlMs` (not extended), and the entries expire when it does. So
   * what is stored under one counter never exceeds `maxBytes` at any time, whatever runs
   * concurrently on any replica. Of entries with the same key the last counts. True when stored
   * (also for no entries, without a round trip).
   */
  abstract setManyWithin(
    budgetKey: string,
    maxBytes: number,
    entries: Array<[key: string, value: string]>,
    ttlMs: number,
  ): Promise<boolean>;
  /** Stores only when no live entry exists; true when stored. */
  abstract setIfAbsent(key: string, value: string, ttlMs: number): Promise<boolean>;
  /** Atomically reads and deletes: of concurrent callers at most one gets the value. */
  abstract take(key: string): Promise<string | null>;
  abstract del(key: string): Promise<void>;
  /** Adds `by` (default 1) to a counter that starts at 0 with the given lifetime; the lifetime is not extended. */
  abstract incr(key: string, ttlMs: number, by?: number): Promise<{ count: number; ttlMs: number }>;
  /** Remaining lifetime in ms, or 0 when absent. */
  abstract ttl(key: string): Promise<number>;
  abstract ping(): Promise<void>;

  /**
   * One rate-limit hit: while `blockKey` is live nothing is counted and its remaining ms come back
   * as `blockedMs`; otherwise `key` is incremented as by `incr`. The backends do it in one round
   * trip (this default takes two): it runs on every request (npm run bench).
   */
  async hit(key: string, blockKey: string, ttlMs: number): Promise<HitAnswer> {
    const blockedMs = await this.ttl(blockKey);
    if (blockedMs > 0) return { blockedMs, count: 0, ttlMs: 0 };
    return { blockedMs: 0, ...(await this.incr(key, ttlMs)) };
  }

  abstract readonly backend: 'redis' | 'postgres';
}

/**
 * The entries `setManyWithin` writes, one per key (the last), in key order (concurrent PostgreSQL
 * upserts then lock rows in the same order), and the bytes it counts for them: UTF-8 keys and values.
 */
export function distinctEntries(entries: Array<[string, string]>): { entries: Array<[string, string]>; bytes: number } {
  const byKey = new Map<string, string>();
  for (const [k, v] of entries) byKey.set(k, v);
  const distinct = [...byKey.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  let bytes = 0;
  for (const [k, v] of distinct) bytes += Buffer.byteLength(k) + Buffer.byteLength(v);
  return { entries: distinct, bytes };
}
