import { CallAbortedError } from '@app/llm';

/** The time and timer of KeyLanes' rests (tests give fakes). */
export interface LaneClock {
  now(): number;
  after(ms: number, fn: () => void): void;
}

const realClock: LaneClock = {
  now: () => performance.now(),
  after: (ms, fn) => void setTimeout(fn, ms),
};

/** Work shorter than this hands the lane on at once (a timer is no finer than a millisecond). */
const MIN_REST_MS = 1;

/**
 * One lane per API key in this replica: work run through it runs one at a time per key, in the order it
 * asked, while other keys' work goes on beside it. When more of the key's work waits, the lane rests as long
 * as the work just done took before the next starts: a key sending many bulk calls at once uses at most
 * about half of the replica's time for them, the rest left to other keys' calls (the event loop, and the
 * cores the processes of a machine share); a key's lone call never waits (bench/suites/noisy-neighbour.js).
 * A scheduling order, not a limit: it needs no shared state and refuses nothing. Keys without work hold
 * no entry.
 */
export class KeyLanes {
  private readonly lanes = new Map<string, Array<() => void>>();

  constructor(private readonly clock: LaneClock = realClock) {}

  /**
   * Runs `work` once the key's earlier work is done. `gone` (the call's client left) drops a waiting call
   * from the lane with CallAbortedError, and a call whose client left before its turn does not start.
   */
  async run<T>(key: string, work: () => Promise<T>, gone?: AbortSignal): Promise<T> {
    await this.enter(key, gone);
    const started = this.clock.now();
    try {
      if (gone?.aborted) throw new CallAbortedError();
      return await work();
    } finally {
      const worked = this.clock.now() - started;
      if (worked >= MIN_REST_MS && (this.lanes.get(key)?.length ?? 0) > 0)
        this.clock.after(worked, () => this.leave(key));
      else this.leave(key);
    }
  }

  /** Keys with work running, resting or waiting (read by tests). */
  get size(): number {
    return this.lanes.size;
  }

  private enter(key: string, gone?: AbortSignal): Promise<void> {
    const queue = this.lanes.get(key);
    if (!queue) {
      this.lanes.set(key, []);
      return Promise.resolve();
    }
    return new Promise<void>((resolve, reject) => {
      const onGone = () => {
        const i = queue.indexOf(start);
        if (i >= 0) queue.splice(i, 1);
        reject(new CallAbortedError());
      };
      const start = () => {
        gone?.removeEventListener('abort', onGone);
        resolve();
      };
      if (gone?.aborted) return reject(new CallAbortedError());
      gone?.addEventListener('abort', onGone, { once: true });
      queue.push(start);
    });
  }

  private leave(key: string): void {
    const queue = this.lanes.get(key);
    const next = queue?.shift();
    if (next) next();
    else this.lanes.delete(key);
  }
}
