import { performance } from 'perf_hooks';

/** How busy the event loop was: its busy and elapsed milliseconds since the last sample, or undefined until a new window. */
export interface LoopGauge {
  sample(): { busyMs: number; elapsedMs: number } | undefined;
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
 * The event loop's busy time (perf_hooks, as libuv counts its idle time), sampled when asked, at most once a
 * `windowMs`: asking between samples costs a clock read.
 */
export function eventLoopGauge(windowMs = 10): LoopGauge {
  let last = performance.eventLoopUtilization();
  let lastAt = performance.now();
  return {
    sample() {
      const now = performance.now();
      if (now - lastAt < windowMs) return undefined;
      const current = performance.eventLoopUtilization();
      const delta = performance.eventLoopUtilization(current, last);
      last = current;
      lastAt = now;
      return { busyMs: delta.active, elapsedMs: delta.active + delta.idle };
    },
  };
}

/**
 * Bulk work gives way to calls: the next slice of a count or an answer of thousands of items (FairTurns)
 * starts at once while the event loop was busy less than `share` of the last window (the time of bulk slices
 * left out: bulkWorked), else it waits a
 * millisecond at a time until it was, at most `maxWaitMs` in all (so bulk work always goes on, at least one
 * slice per `maxWaitMs`). Other keys' calls are answered in the room kept: a key sending bulk requests as fast
 * as its limits allow takes the loop's spare time, not the time other keys' calls need
 * (bench/suites/noisy-neighbour.js). `share` 1 turns it off.
 */
export class LoopHeadroom {
  private bulkMs = 0;
  private busyShare = 0;

  constructor(
    private readonly share = 1,
    private readonly gauge: LoopGauge = eventLoopGauge(),
    private readonly maxWaitMs = 10,
    private readonly timers: HeadroomTimers = realTimers,
  ) {}

  /**
   * Time a slice of bulk work took (Pace reports each): not counted as the loop being busy, so bulk work
   * alone, on a replica with nothing else to do, never waits for itself.
   */
  bulkWorked(ms: number): void {
    this.bulkMs += ms;
  }

  /** Runs `fn` once the loop has room (see the class), in a later turn of the event loop in any case. */
  schedule(fn: () => void): void {
    if (this.share >= 1 || this.busy() < this.share) return this.timers.soon(fn);
    const since = this.timers.now();
    const attempt = () => {
      if (this.timers.now() - since >= this.maxWaitMs || this.busy() < this.share) fn();
      else this.timers.after(1, attempt);
    };
    this.timers.after(1, attempt);
  }

  /** The loop's busy share of the last window, its bulk slices left out. */
  private busy(): number {
    const sample = this.gauge.sample();
    if (sample) {
      this.busyShare = sample.elapsedMs > 0 ? Math.max(0, sample.busyMs - this.bulkMs) / sample.elapsedMs : 0;
      this.bulkMs = 0;
    }
    return this.busyShare;
  }
}
