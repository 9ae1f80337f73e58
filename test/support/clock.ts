import type { INestApplication } from '@nestjs/common';
import { Clock } from '@app/platform';

/**
 * A clock that stands still until a test moves it: an app started with it (startMembership(env, { clock }))
 * decides lock ends, token and code expiry and grace windows by it, so a test advances it instead of sleeping.
 */
export class FakeClock extends Clock {
  private current: number;
  private sleepers: Array<{ until: number; wake: () => void }> = [];
  private watchers: Array<{ count: number; wake: () => void }> = [];

  constructor(start = Date.now()) {
    super();
    this.current = start;
  }

  override now(): number {
    return this.current;
  }

  advance(ms: number): void {
    this.current += ms;
    const due = this.sleepers.filter((s) => s.until <= this.current);
    this.sleepers = this.sleepers.filter((s) => s.until > this.current);
    due.forEach((s) => s.wake());
  }

  /** Resolves when the clock reaches now + ms, i.e. when a test advances it that far, or when `signal` aborts. */
  override sleep(ms: number, signal?: AbortSignal): Promise<void> {
    if (ms <= 0 || signal?.aborted) return Promise.resolve();
    return new Promise((wake) => {
      const sleeper = { until: this.current + ms, wake };
      this.sleepers.push(sleeper);
      signal?.addEventListener(
        'abort',
        () => {
          this.sleepers = this.sleepers.filter((s) => s !== sleeper);
          wake();
        },
        { once: true },
      );
      for (const w of this.watchers.filter((w) => this.sleepers.length >= w.count)) w.wake();
      this.watchers = this.watchers.filter((w) => this.sleepers.length < w.count);
    });
  }

  /** Resolves once at least `count` sleeps are waiting on this clock. */
  whenSleeping(count = 1): Promise<void> {
    if (this.sleepers.length >= count) return Promise.resolve();
    return new Promise((wake) => this.watchers.push({ count, wake }));
  }
}

/** Makes the app's Clock read `clock` (the app's instance is already injected everywhere). */
export function useClock(app: INestApplication, clock: Clock): void {
  const appClock = app.get(Clock);
  appClock.now = () => clock.now();
  appClock.sleep = (ms, signal) => clock.sleep(ms, signal);
}
