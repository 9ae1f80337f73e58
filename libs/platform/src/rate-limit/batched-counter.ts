import { SharedState } from '../shared-state/shared-state';

interface Entry {
  window: number;
  /** Hits counted here and not yet added to the shared counter. */
  local: number;
  /** The shared counter of this window as last read (every replica's flushed hits). */
  known: number;
  lastSync: number;
}

const MAX_ENTRIES = 50_000;

/**
 * A fixed-window limit counted in shared state without a round trip per request: each replica counts
 * hits in memory and adds them to the shared counter at least every `syncMs` and every `limit/20` hits
 * (and on the first hit of a window). A replica therefore sees the other replicas' hits at most
 * `syncMs` late: with N replicas a caller can pass the limit by at most about N x (limit/20) hits, or
 * what N replicas serve it in `syncMs`, whichever is less. One replica alone never passes the limit.
 */
export class BatchedCounter {
  private readonly entries = new Map<string, Entry>();

  /** `now`: the clock the windows are cut by (the app's Clock, so a test can hold one window still). */
  constructor(
    private readonly state: SharedState,
    private readonly prefix: string,
    private readonly syncMs = 1000,
    private readonly now: () => number = Date.now,
  ) {}

  /** Counts one hit of `key`; 0 when allowed, else the ms until the window ends. */
  async hit(key: string, limit: number, windowMs: number): Promise<number> {
    const now = this.now();
    const window = Math.floor(now / windowMs);
    const untilEnd = windowMs - (now % windowMs);
    let e = this.entries.get(key);
    if (!e || e.window !== window) {
      if (!e && this.entries.size >= MAX_ENTRIES) this.prune(now, windowMs);
      e = { window, local: 0, known: 0, lastSync: 0 };
      this.entries.set(key, e);
    }
    if (e.known + e.local >= limit) return untilEnd;
    e.local++;
    if (e.local >= Math.max(1, Math.floor(limit / 20)) || now - e.lastSync >= this.syncMs)
      await this.sync(key, e, untilEnd + 1000);
    return e.known + e.local > limit ? untilEnd : 0;
  }

  private async sync(key: string, e: Entry, ttlMs: number): Promise<void> {
    const delta = e.local;
    e.local = 0;
    e.lastSync = this.now();
    try {
      const { count } = await this.state.incr(`${this.prefix}${key}:${e.window}`, ttlMs, delta);
      e.known = Math.max(e.known, count);
    } catch (err) {
      e.local += delta;
      e.lastSync = 0;
      throw err;
    }
  }

  private prune(now: number, windowMs: number): void {
    const current = Math.floor(now / windowMs);
    for (const [k, e] of this.entries) if (e.window !== current) this.entries.delete(k);
    if (this.entries.size >= MAX_ENTRIES) this.entries.clear();
  }
}
