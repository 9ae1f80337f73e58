import { CallAbortedError, UpstreamError } from './types';

interface Share {
  active: number;
  /** Calls of this key waiting for a connection, oldest first. */
  waiting: Waiter[];
}

interface Waiter {
  start: () => void;
}

/**
 * The connections of one upstream's pool shared out per API key: at most `capacity` calls at once (the pool's
 * connections), of which at most `perKey` for one key, so a key holding slow streams leaves the rest to
 * others. A call over either bound waits here; a freed connection goes to the waiting keys in turn (the key
 * served longest ago first), not to whoever asked first, so one key's queue of calls does not stand before
 * another key's one call. Calls without a key share one bucket.
 *
 * Per process, like the pool it guards. `enter` answers undefined when the call may start at once (no
 * promise on the hot path); every call that entered must `leave` exactly once.
 */
/** A call that waited `waitMs` for a connection of its key's share and got none: nothing was sent. */
export function poolWaitExpired(waitMs: number): UpstreamError {
  return new UpstreamError(`no connection to the upstream was free for this caller within ${waitMs} ms`, 'busy', 0);
}

export class PoolShares {
  private active = 0;
  private dispatching = false;
  private readonly shares = new Map<string, Share>();
  /** Keys with calls waiting, in the order their turns come. */
  private readonly turns: string[] = [];

  constructor(
    readonly capacity: number,
    readonly perKey: number,
  ) {}

  /** Calls running, and waiting (for tests and health output). */
  get stats(): { active: number; waiting: number } {
    let waiting = 0;
    for (const s of this.shares.values()) waiting += s.waiting.length;
    return { active: this.active, waiting };
  }

  /**
   * Undefined when the call may start now (it holds a connection until `leave`; `start` is not called), else its
   * place in the line: `start` is called at its turn (it then holds a connection), unless `cancel` took it out first.
   */
  admit(key: string | undefined, start: () => void): object | undefined {
    const name = key ?? '';
    let share = this.shares.get(name);
    // Any key waiting now is held by its own share (a free connection would have gone to it), so starting is fair.
    if (this.active < this.capacity && (share?.active ?? 0) < this.perKey) {
      if (!share) this.shares.set(name, (share = { active: 0, waiting: [] }));
      share.active++;
      this.active++;
      return undefined;
    }
    if (!share) this.shares.set(name, (share = { active: 0, waiting: [] }));
    const waiter: Waiter = { start };
    share.waiting.push(waiter);
    if (share.waiting.length === 1) this.turns.push(name);
    return waiter;
  }

  /**
   * Takes a waiting call out of the line (its caller left): true when it was still waiting (it holds nothing),
   * false when its turn came already (it holds a connection, to `leave`).
   */
  cancel(key: string | undefined, waiter: object): boolean {
    const name = key ?? '';
    const share = this.shares.get(name);
    const at = share ? share.waiting.indexOf(waiter as Waiter) : -1;
    if (!share || at < 0) return false;
    share.waiting.splice(at, 1);
    if (share.waiting.length === 0) this.dropTurn(name);
    this.forgetIdle(name, share);
    return true;
  }

  /**
   * `admit` as a promise: undefined when the call may start now, else the promise of its turn, which rejects with
   * CallAbortedError when `signal` aborts first, or with poolWaitExpired after `waitMs` (it then holds nothing).
   */
  enter(key: string | undefined, signal?: AbortSignal, waitMs?: number): Promise<void> | undefined {
    let start!: () => void;
    const turn = new Promise<void>((resolve) => (start = resolve));
    const waiter = this.admit(key, () => start());
    if (!waiter) return undefined;
    if (!signal && waitMs === undefined) return turn;
    return new Promise<void>((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      const giveUp = (err: Error) => {
        signal?.removeEventListener('abort', onAbort);
        clearTimeout(timer);
        if (!this.cancel(key, waiter)) this.leave(key);
        reject(err);
      };
      const onAbort = () => giveUp(new CallAbortedError());
      if (signal?.aborted) return onAbort();
      signal?.addEventListener('abort', onAbort, { once: true });
      if (waitMs !== undefined) timer = setTimeout(() => giveUp(poolWaitExpired(waitMs)), waitMs);
      void turn.then(() => {
        signal?.removeEventListener('abort', onAbort);
        clearTimeout(timer);
        resolve();
      });
    });
  }

  /** A call that entered ended (answered, failed or aborted): its connection goes to the next key in turn. */
  leave(key: string | undefined): void {
    const name = key ?? '';
    const share = this.shares.get(name);
    if (!share || share.active === 0) return;
    share.active--;
    this.active--;
    this.forgetIdle(name, share);
    this.dispatch();
  }

  /**
   * Starts waiting calls while connections are free, keys in turn. Not reentrant: a call started here that ends
   * at once (a synchronous failure) leaves from inside `start`, and this loop, not a nested one, goes on.
   */
  private dispatch(): void {
    if (this.dispatching) return;
    this.dispatching = true;
    try {
      for (let i = 0; i < this.turns.length && this.active < this.capacity;) {
        const name = this.turns[i];
        const share = this.shares.get(name)!;
        if (share.active >= this.perKey) {
          i++;
          continue;
        }
        const waiter = share.waiting.shift()!;
        share.active++;
        this.active++;
        this.turns.splice(i, 1);
        // Served: to the back of the line while it has more waiting.
        if (share.waiting.length) this.turns.push(name);
        waiter.start();
        // What `start` did may have changed the line: look again from its head.
        i = 0;
      }
    } finally {
      this.dispatching = false;
    }
  }

  private dropTurn(name: string): void {
    const at = this.turns.indexOf(name);
    if (at >= 0) this.turns.splice(at, 1);
  }

  private forgetIdle(name: string, share: Share): void {
    if (share.active === 0 && share.waiting.length === 0) this.shares.delete(name);
  }
}

/** A key's share of a pool of `connections` when the providers file sets none: all but a quarter of it. */
export function defaultConnectionsPerKey(connections: number): number {
  return Math.max(1, connections - Math.max(1, Math.floor(connections / 4)));
}
