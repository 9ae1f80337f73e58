import { Injectable } from '@nestjs/common';

/**
 * The time services decide expiries by (locks, token lifetimes, code expiry, grace windows).
 * Injected rather than read from Date.now so an e2e test can move it instead of sleeping.
 */
@Injectable()
export class Clock {
  now(): number {
    return Date.now();
  }

  /**
   * Resolves once `ms` have passed on this clock (a test's clock resolves it when moved past that point), or at
   * once when `signal` aborts (the wait is then over, not waiting on the clock any more). The wait does not keep the
   * process up by itself: what waits is a request or a check that its server keeps alive.
   */
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      if (signal?.aborted) return resolve();
      const timer = setTimeout(done, ms).unref();
      function done() {
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        resolve();
      }
      signal?.addEventListener('abort', done, { once: true });
    });
  }
}
