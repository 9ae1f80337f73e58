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
   * Resolves once `ms` have passed on this clock (a test's clock resolves it when moved past that point). The
   * wait does not keep the process up by itself: what waits is a request or a check that its server keeps alive.
   */
  sleep(ms: number): Promise<void> {
    return new Promise((resolve) => setTimeout(resolve, ms).unref());
  }
}
