import type { INestApplication } from '@nestjs/common';
import { Clock } from '@app/platform';

/**
 * A clock that stands still until a test moves it: an app started with it (startMembership(env, { clock }))
 * decides lock ends, token and code expiry and grace windows by it, so a test advances it instead of sleeping.
 */
export class FakeClock extends Clock {
  private current: number;

  constructor(start = Date.now()) {
    super();
    this.current = start;
  }

  override now(): number {
    return this.current;
  }

  advance(ms: number): void {
    this.current += ms;
  }
}

/** Makes the app's Clock read `clock` (the app's instance is already injected everywhere). */
export function useClock(app: INestApplication, clock: Clock): void {
  const appClock = app.get(Clock);
  appClock.now = () => clock.now();
}
