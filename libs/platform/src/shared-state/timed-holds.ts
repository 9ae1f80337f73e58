import { Injectable } from '@nestjs/common';
import { Clock } from '../clock/clock';
import { SharedState } from './shared-state';

/**
 * Holds (locks, cooldowns) kept in SharedState whose end is a time of the Clock, stored as the value:
 * the store's own expiry is set to the same length and only clears the entry away, so the Clock decides.
 */
@Injectable()
export class TimedHolds {
  constructor(
    private readonly state: SharedState,
    private readonly clock: Clock,
  ) {}

  /** Remaining ms of the hold under `key`, 0 when there is none or it is over. */
  async remaining(key: string): Promise<number> {
    const value = await this.state.get(key);
    if (value === null) return 0;
    const until = Number(value);
    // An entry written before holds carried their end ("1"): its store expiry is its end.
    if (!Number.isFinite(until) || until < 1e12) return this.state.ttl(key);
    return Math.max(0, until - this.clock.now());
  }

  /** Starts a hold of `ms` unless one is live; true when this call started it. */
  async start(key: string, ms: number): Promise<boolean> {
    const until = String(this.clock.now() + ms);
    if (await this.state.setIfAbsent(key, until, ms)) return true;
    // The entry can outlive its end when the store's clock lags the Clock: replace it then.
    if ((await this.remaining(key)) > 0) return false;
    await this.state.set(key, until, ms);
    return true;
  }
}
