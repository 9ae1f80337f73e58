import { CallAbortedError } from '@app/llm';

interface Waiter {
  bytes: number;
  start: () => void;
}

interface Share {
  held: number;
  waiting: Waiter[];
}

/**
 * Bytes of answers a key's calls hold in this replica at once (an embeddings call's vectors, from their arrival from
 * the upstream until the answer made of them is written: `hold`), at most `perKey` per key: a call that does not fit waits, in order,
 * until the key's earlier calls give theirs back; a key's lone call always starts, whatever its size. Other keys'
 * calls never wait for it. A scheduling order, not a limit: it needs no shared state and refuses nothing.
 *
 * What it bounds is the memory one key's bulk answers take, and with it the garbage collections they cause for every
 * call of the replica (each answer's socket reads are memory outside V8's heap, and V8 collects the whole heap each
 * time some 64 MB of it were allocated: docs/operations/performance.md, "What stalls key B under embeddings-large").
 * Keys without calls hold no entry.
 */
export class KeyBytes {
  private readonly shares = new Map<string, Share>();

  constructor(readonly perKey: number) {}

  /**
   * Waits until `bytes` of `key` fit, then runs `work` holding them. `gone` (the call's client left) takes a waiting
   * call out of the line with CallAbortedError.
   */
  async run<T>(key: string, bytes: number, work: () => Promise<T>, gone?: AbortSignal): Promise<T> {
    if (this.perKey <= 0) return work();
    await this.enter(key, bytes, gone);
    try {
      if (gone?.aborted) throw new CallAbortedError();
      return await work();
    } finally {
      this.leave(key, bytes);
    }
  }

  /**
   * As `run`, but the bytes stay held past `work` until its result's `release` is called (the answer written from
   * them, or its client gone), or at once when `work` fails: an answer's memory is the key's until it is sent, so a
   * key's bulk calls cannot have more answers waiting for their clients than fit its share. The result's `release`
   * gives back both its own (work's) and the bytes, once; `releaseShare` only the bytes (an answer queued on a
   * pipelined connection).
   */
  async hold<T extends object>(
    key: string,
    bytes: number,
    work: () => Promise<T>,
    gone?: AbortSignal,
  ): Promise<T & { release: () => void; releaseShare: () => void }> {
    if (this.perKey <= 0) {
      const value = await work();
      return {
        ...value,
        release: (value as { release?: () => void }).release ?? (() => undefined),
        releaseShare: () => undefined,
      };
    }
    await this.enter(key, bytes, gone);
    let held = true;
    const leave = () => {
      if (!held) return;
      held = false;
      this.leave(key, bytes);
    };
    try {
      if (gone?.aborted) throw new CallAbortedError();
      const value = await work();
      const own = (value as { release?: () => void }).release;
      let ownGiven = false;
      return {
        ...value,
        release: () => {
          if (!ownGiven) own?.();
          ownGiven = true;
          leave();
        },
        releaseShare: leave,
      };
    } catch (e) {
      leave();
      throw e;
    }
  }

  /** Bytes `key` holds now (read by tests). */
  held(key: string): number {
    return this.shares.get(key)?.held ?? 0;
  }

  /** Keys holding or waiting (read by tests). */
  get size(): number {
    return this.shares.size;
  }

  private enter(key: string, bytes: number, gone?: AbortSignal): Promise<void> {
    let share = this.shares.get(key);
    if (!share) this.shares.set(key, (share = { held: 0, waiting: [] }));
    if (!share.waiting.length && (share.held === 0 || share.held + bytes <= this.perKey)) {
      share.held += bytes;
      return Promise.resolve();
    }
    const s = share;
    return new Promise<void>((resolve, reject) => {
      const onGone = () => {
        const i = s.waiting.indexOf(waiter);
        if (i >= 0) s.waiting.splice(i, 1);
        this.forgetIdle(key, s);
        // The next in line may fit now that this one is gone.
        this.wake(s);
        reject(new CallAbortedError());
      };
      const waiter: Waiter = {
        bytes,
        start: () => {
          gone?.removeEventListener('abort', onGone);
          resolve();
        },
      };
      if (gone?.aborted) {
        this.forgetIdle(key, s);
        return reject(new CallAbortedError());
      }
      gone?.addEventListener('abort', onGone, { once: true });
      s.waiting.push(waiter);
    });
  }

  private leave(key: string, bytes: number): void {
    const share = this.shares.get(key);
    if (!share) return;
    share.held -= bytes;
    this.wake(share);
    this.forgetIdle(key, share);
  }

  /** Starts the calls at the head of the line that fit now (the first one always, when nothing is held). */
  private wake(share: Share): void {
    while (share.waiting.length) {
      const next = share.waiting[0];
      if (share.held !== 0 && share.held + next.bytes > this.perKey) return;
      share.waiting.shift();
      share.held += next.bytes;
      next.start();
    }
  }

  private forgetIdle(key: string, share: Share): void {
    if (share.held === 0 && !share.waiting.length) this.shares.delete(key);
  }
}
