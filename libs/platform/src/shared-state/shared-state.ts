/**
 * Short-lived state every replica must see the same way (rate-limit counters, one-time states,
 * caches). Redis when REDIS_URL is set, otherwise a PostgreSQL table; every entry expires.
 */
export abstract class SharedState {
  abstract get(key: string): Promise<string | null>;
  abstract set(key: string, value: string, ttlMs: number): Promise<void>;
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
  async hit(key: string, blockKey: string, ttlMs: number): Promise<{ blockedMs: number; count: number; ttlMs: number }> {
    const blockedMs = await this.ttl(blockKey);
    if (blockedMs > 0) return { blockedMs, count: 0, ttlMs: 0 };
    return { blockedMs: 0, ...(await this.incr(key, ttlMs)) };
  }
  /**
   * One hit of a sliding-window limit (see SlidingWindowLimiter) in one round trip: the hits kept under
   * `key` in buckets of `bucketMs` (index = floor(ms / bucketMs)) are summed from the bucket holding
   * `nowMs - windowMs` on; below `limit` the hit is added to the bucket of `nowMs`, else nothing changes.
   */
  abstract slidingWindowHit(key: string, limit: number, windowMs: number, bucketMs: number, nowMs: number): Promise<{ allowed: boolean; count: number; retryAfterMs: number }>;

  abstract readonly backend: 'redis' | 'postgres';
}
