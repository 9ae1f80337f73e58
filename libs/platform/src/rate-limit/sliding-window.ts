import { SharedState } from '../shared-state/shared-state';

/** Optional provider of the milliseconds clock rate limits read (tests inject a fake one). */
export const RATE_CLOCK = Symbol('RATE_CLOCK');

/** What one hit of a sliding-window limit answers. */
export interface SlidingWindowResult {
  allowed: boolean;
  /** Hits counted in the window, this one included when allowed. */
  count: number;
  /** When refused: ms until the oldest counted hit leaves the window (at least 1). */
  retryAfterMs: number;
}

/** Sub-buckets per window: a hit is forgotten at most windowMs/BUCKETS_PER_WINDOW late (1 s of a minute). */
export const BUCKETS_PER_WINDOW = 60;

/**
 * "At most `limit` hits in any `windowMs`", counted in shared state in one round trip per hit
 * (SharedState.slidingWindowHit). Hits are kept in BUCKETS_PER_WINDOW buckets and the bucket that
 * holds `now - windowMs` still counts, so the limit errs on the strict side by at most one bucket and
 * no window boundary lets a second `limit` through, as a fixed window did. The clock is injectable
 * (tests); replicas are assumed to have NTP-synchronised clocks.
 */
export class SlidingWindowLimiter {
  constructor(
    private readonly state: SharedState,
    private readonly prefix: string,
    private readonly now: () => number = Date.now,
  ) {}

  hit(key: string, limit: number, windowMs: number): Promise<SlidingWindowResult> {
    if (limit < 1) return Promise.resolve({ allowed: false, count: 0, retryAfterMs: windowMs });
    return this.state.slidingWindowHit(`${this.prefix}${key}`, limit, windowMs, Math.ceil(windowMs / BUCKETS_PER_WINDOW), Math.floor(this.now()));
  }
}

/**
 * The decision both backends make from a key's buckets (index -> hits), for the backends' tests and
 * for reading back the PostgreSQL row: `first` is the oldest bucket still counted.
 */
export function slidingWindowRetryMs(buckets: Record<string, number>, nowMs: number, windowMs: number, bucketMs: number): number {
  let oldest = Infinity;
  for (const k of Object.keys(buckets)) if (k !== 'a' && buckets[k] > 0) oldest = Math.min(oldest, Number(k));
  if (oldest === Infinity) return 1;
  return Math.max(1, (oldest + 1) * bucketMs + windowMs - nowMs);
}
