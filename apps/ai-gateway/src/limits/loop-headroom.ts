import { performance } from 'perf_hooks';

/** How busy the event loop was lately: its busy share (0 to 1) of a recent window. */
export interface LoopGauge {
  busy(): number;
}

/** The timers LoopHeadroom schedules with (tests give fakes). */
export interface HeadroomTimers {
  now(): number;
  soon(fn: () => void): void;
  after(ms: number, fn: () => void): void;
}

const realTimers: HeadroomTimers = {
  now: () => performance.now(),
  soon: (fn) => void setImmediate(fn),
  after: (ms, fn) => void setTimeout(fn, ms),
};

/**
 * The event loop's utilization (perf_hooks, as libuv counts its idle time) over the last `windowMs` at least:
 * sampled when asked, at most once a window, so asking costs a clock read between samples.
 */
export function eventLoopGauge(windowMs = 10): LoopGauge {
  let last = performance.eventLoopUtilization();
  let lastAt = performance.now();
  let share = 0;
  return {
    busy() {
      const now = performance.now();
      if (now - lastAt >= windowMs) {
        const current = performance.eventLoopUtilization();
        share = performance.eventLoopUtilization(current, last).utilization;
        last = current;
        lastAt = now;
      }
      return share;
    },
  };
}

/**
 * Bulk work gives way to calls: the next slice of a count or an answer of thousands of items (FairTurns)
 * starts at once while the event loop was busy less than `share` of the last window, else it waits a
 * millisecond at a time until it was, at most `maxWaitMs` in all (so bulk work always goes on, at least one
 * slice per `maxWaitMs`). Other keys' calls are answered in the room kept: a key sending bulk requests as fast
 * as its limits allow takes the loop's spare time, not the time other keys' calls need
 * (bench/suites/noisy-neighbour.js). `share` 1 turns it off.
 */
export class LoopHeadroom {
  constructor(
    private readonly share = 1,
    private readonly gauge: LoopGauge = eventLoopGauge(),
    private readonly maxWaitMs = 10,
    private readonly timers: HeadroomTimers = realTimers,
  ) {}

  /** Runs `fn` once the loop has room (see the class), in a later turn of the event loop in any case. */
  schedule(fn: () => void): void {
    if (this.share >= 1 || this.gauge.busy() < this.share) return this.timers.soon(fn);
    const since = this.timers.now();
    const attempt = () => {
      if (this.timers.now() - since >= this.maxWaitMs || this.gauge.busy() < this.share) fn();
      else this.timers.after(1, attempt);
    };
    this.timers.after(1, attempt);
  }
}
