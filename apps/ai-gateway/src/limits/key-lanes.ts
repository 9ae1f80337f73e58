import { CallAbortedError } from '@app/llm';

/**
 * One lane per API key in this replica: work run through it runs one at a time per key, in the order it
 * asked, while other keys' work goes on beside it. A key sending many bulk calls at once gets the
 * replica's event loop for one of them at a time, as a key sending one does (bench/suites/noisy-neighbour.js):
 * a scheduling order, not a limit, so it needs no shared state; nothing is refused, a call waits its turn.
 * Keys without waiting work hold no entry.
 */
export class KeyLanes {
  private readonly lanes = new Map<string, Array<() => void>>();

  /**
   * Runs `work` once the key's earlier work is done. `gone` (the call's client left) drops a waiting call
   * from the lane with CallAbortedError, and a call whose client left before its turn does not start.
   */
  async run<T>(key: string, work: () => Promise<T>, gone?: AbortSignal): Promise<T> {
    await this.enter(key, gone);
    try {
      if (gone?.aborted) throw new CallAbortedError();
      return await work();
    } finally {
      this.leave(key);
    }
  }

  /** Keys with work running or waiting (read by tests). */
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
