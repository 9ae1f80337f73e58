import { availableParallelism } from 'os';

/**
 * Refused because too much engine work is already running or waiting: `scope` 'key' when this
 * caller's own share is used up (answer 429), 'server' when the whole process is (answer 503).
 */
export class EngineBusyError extends Error {
  constructor(
    readonly scope: 'key' | 'server',
    message: string,
  ) {
    super(message);
    this.name = 'EngineBusyError';
  }
}

/** The request or session that wanted the work ended (client gone); its child process was killed. */
export class EngineAbortedError extends Error {
  constructor(message = 'the request ended before the engine finished') {
    super(message);
    this.name = 'EngineAbortedError';
  }
}

/** Who asks for engine work and until when: `key` buckets the per-caller caps, `signal` ends the work. */
export interface EngineCallOptions {
  /** The API key (or other tenant) the work is for; absent means only the process-wide caps apply. */
  key?: string;
  /** Aborted when the client disconnects, the socket closes or the request is abandoned. */
  signal?: AbortSignal;
  /**
   * A later step of work already admitted (the next segment of a long synthesis): it waits for a slot
   * like any other, but is never refused by the queue caps, so an answer already under way is not cut.
   */
  continued?: boolean;
}

export interface EngineLimits {
  /** Engine works (child processes, worker-thread calls, image decodes) running at once in this process. */
  maxConcurrent: number;
  /** Of those, at most this many for one key. */
  maxConcurrentPerKey: number;
  /** Works waiting for a slot in this process; beyond it calls are refused (503). */
  maxQueued: number;
  /** Works one key may have waiting; beyond it that key is refused (429). */
  maxQueuedPerKey: number;
}

export function defaultEngineLimits(): EngineLimits {
  return {
    maxConcurrent: Math.max(1, availableParallelism()),
    maxConcurrentPerKey: 2,
    maxQueued: 32,
    maxQueuedPerKey: 4,
  };
}

interface Waiter {
  key?: string;
  start: () => void;
  reject: (error: Error) => void;
}

/**
 * The one gate every local engine's heavy work passes (ffmpeg, PocketSphinx, OCR, vision, TTS,
 * embeddings, image decoding): a counting semaphore with a per-key share and a bounded FIFO queue.
 * Work is accounted at the leaves (one child process, one worker call, one decode), never nested,
 * so a request holding a slot never waits for another one.
 *
 * Process-local on purpose: what it protects is this replica's CPU and memory; each replica has its
 * own processes to bound. Per-key request rates across replicas are the platform rate limiter's job.
 */
export class EngineLimiter {
  private static instance: EngineLimiter | null = null;
  private limits: EngineLimits;
  private active = 0;
  private readonly activeByKey = new Map<string, number>();
  private readonly waiting: Waiter[] = [];
  private readonly waitingByKey = new Map<string, number>();
  private peakActive = 0;
  /** When each key with work running or waiting last got a slot (a counter, not a time). */
  private readonly servedAt = new Map<string, number>();
  private turns = 0;
  /** Work of several steps under way (open), in all and by key. */
  private open = 0;
  private readonly openByKey = new Map<string, number>();

  constructor(limits: Partial<EngineLimits> = {}) {
    this.limits = { ...defaultEngineLimits(), ...limits };
  }

  /** The process's limiter, shared by every engine. */
  static shared(): EngineLimiter {
    return (EngineLimiter.instance ??= new EngineLimiter());
  }

  configure(limits: Partial<EngineLimits>): void {
    this.limits = { ...this.limits, ...limits };
    this.dispatch();
  }

  get current(): Readonly<EngineLimits> {
    return this.limits;
  }

  /** Counters for tests and health output. */
  get stats(): { active: number; queued: number; peakActive: number; open: number } {
    return { active: this.active, queued: this.waiting.length, peakActive: this.peakActive, open: this.open };
  }

  /**
   * Opens work of several steps (a long synthesis, a big embeddings batch), whose later steps run with
   * `continued`: refused with EngineBusyError when the key already has as much open as its share may run
   * and wait (maxConcurrentPerKey + maxQueuedPerKey), or the process (maxConcurrent + maxQueued). That
   * bounds the continued steps, which the queue caps do not refuse: at most one waits per open work.
   * Returns the function that closes it (idempotent).
   */
  openWork(key?: string): () => void {
    const keyOpen = key === undefined ? 0 : (this.openByKey.get(key) ?? 0);
    if (key !== undefined && keyOpen >= this.limits.maxConcurrentPerKey + this.limits.maxQueuedPerKey)
      throw new EngineBusyError(
        'key',
        `this API key already has ${keyOpen} engine jobs under way; retry when one finishes`,
      );
    if (this.open >= this.limits.maxConcurrent + this.limits.maxQueued)
      throw new EngineBusyError('server', `the local engines are busy (${this.open} jobs under way); retry shortly`);
    this.open++;
    if (key !== undefined) this.openByKey.set(key, keyOpen + 1);
    let closed = false;
    return () => {
      if (closed) return;
      closed = true;
      this.open--;
      if (key === undefined) return;
      const n = (this.openByKey.get(key) ?? 1) - 1;
      if (n > 0) this.openByKey.set(key, n);
      else this.openByKey.delete(key);
    };
  }

  /**
   * Runs `work` once a slot is free (at once, queued, or refused with EngineBusyError). The signal
   * handed to `work` aborts when the caller's does; a caller that leaves while queued is dropped.
   */
  async run<T>(opts: EngineCallOptions, work: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const signal = opts.signal ?? new AbortController().signal;
    if (signal.aborted) throw new EngineAbortedError();
    await this.acquire(opts.key, signal, opts.continued === true);
    try {
      if (signal.aborted) throw new EngineAbortedError();
      return await work(signal);
    } finally {
      this.release(opts.key);
    }
  }

  private canStart(key?: string): boolean {
    if (this.active >= this.limits.maxConcurrent) return false;
    return key === undefined || (this.activeByKey.get(key) ?? 0) < this.limits.maxConcurrentPerKey;
  }

  private take(key?: string): void {
    this.active++;
    this.peakActive = Math.max(this.peakActive, this.active);
    if (key !== undefined) {
      this.activeByKey.set(key, (this.activeByKey.get(key) ?? 0) + 1);
      this.servedAt.set(key, ++this.turns);
    }
  }

  /** A key with nothing running or waiting is forgotten: the maps stay as small as the work in hand. */
  private forgetIdle(key: string): void {
    if (!this.activeByKey.has(key) && !this.waitingByKey.has(key)) this.servedAt.delete(key);
  }

  private acquire(key: string | undefined, signal: AbortSignal, continued: boolean): Promise<void> {
    // Waiters left in the queue can only be ones blocked by their own key's share, so starting now is fair.
    if (this.canStart(key)) {
      this.take(key);
      return Promise.resolve();
    }
    if (!continued && key !== undefined && (this.waitingByKey.get(key) ?? 0) >= this.limits.maxQueuedPerKey) {
      return Promise.reject(
        new EngineBusyError(
          'key',
          `this API key already has ${this.activeByKey.get(key) ?? 0} engine jobs running and ${this.waitingByKey.get(key)} waiting; retry when one finishes`,
        ),
      );
    }
    if (!continued && this.waiting.length >= this.limits.maxQueued) {
      return Promise.reject(
        new EngineBusyError(
          'server',
          `the local engines are busy (${this.active} jobs running, ${this.waiting.length} waiting); retry shortly`,
        ),
      );
    }
    return new Promise<void>((resolve, reject) => {
      const onAbort = () => {
        const at = this.waiting.indexOf(waiter);
        if (at >= 0) {
          this.waiting.splice(at, 1);
          this.unqueue(key);
        }
        reject(new EngineAbortedError());
      };
      const waiter: Waiter = {
        key,
        start: () => {
          signal.removeEventListener('abort', onAbort);
          resolve();
        },
        reject,
      };
      this.waiting.push(waiter);
      if (key !== undefined) {
        this.waitingByKey.set(key, (this.waitingByKey.get(key) ?? 0) + 1);
        // A key new to the queue goes after the keys waiting since before the latest turn, before the
        // key that took it: coming back idle must not put it ahead of everyone still waiting.
        if (!this.servedAt.has(key)) this.servedAt.set(key, this.turns - 0.5);
      }
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  private unqueue(key?: string): void {
    if (key === undefined) return;
    const n = (this.waitingByKey.get(key) ?? 1) - 1;
    if (n > 0) this.waitingByKey.set(key, n);
    else {
      this.waitingByKey.delete(key);
      this.forgetIdle(key);
    }
  }

  private release(key?: string): void {
    this.active--;
    if (key !== undefined) {
      const n = (this.activeByKey.get(key) ?? 1) - 1;
      if (n > 0) this.activeByKey.set(key, n);
      else {
        this.activeByKey.delete(key);
        this.forgetIdle(key);
      }
    }
    this.dispatch();
  }

  /**
   * Fills free slots: each goes to the oldest waiter of the key with the fewest works running, and
   * among those of the key served longest ago, so a key with many steps queued (a long synthesis in
   * segments, several uploads) takes turns with one that has a single work waiting instead of going
   * first by age.
   */
  private dispatch(): void {
    while (this.active < this.limits.maxConcurrent) {
      let pick = -1;
      let pickRunning = Infinity;
      let pickServed = Infinity;
      for (let i = 0; i < this.waiting.length; i++) {
        const key = this.waiting[i].key;
        if (!this.canStart(key)) continue;
        const running = key === undefined ? 0 : (this.activeByKey.get(key) ?? 0);
        const served = key === undefined ? 0 : (this.servedAt.get(key) ?? 0);
        if (running < pickRunning || (running === pickRunning && served < pickServed)) {
          pick = i;
          pickRunning = running;
          pickServed = served;
        }
      }
      if (pick < 0) return;
      const [waiter] = this.waiting.splice(pick, 1);
      this.unqueue(waiter.key);
      this.take(waiter.key);
      waiter.start();
    }
  }
}

/** Shorthand: run `work` under the process's shared limiter. */
export function limitEngineWork<T>(
  opts: EngineCallOptions | undefined,
  work: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  return EngineLimiter.shared().run(opts ?? {}, work);
}
