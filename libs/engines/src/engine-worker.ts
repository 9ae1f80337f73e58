import { Worker } from 'worker_threads';
import { EngineAbortedError, EngineCallOptions, limitEngineWork } from './engine-limiter';

/** Thrown when a local engine cannot load (package missing, model unreadable) or died; callers answer 503. */
export class EngineUnavailableError extends Error {
  constructor(
    readonly engine: string,
    reason: string,
  ) {
    super(`${engine} engine unavailable: ${reason}`);
    this.name = 'EngineUnavailableError';
  }
}

/** Thrown when an engine rejects its input (undecodable image, unsupported audio); callers answer 4xx. */
/** The engine threw while working on a valid input (out of memory, a native fault): worth a retry. */
export class EngineFailedError extends Error {
  constructor(
    readonly engine: string,
    reason: string,
  ) {
    super(`${engine} engine failed: ${reason}`);
    this.name = 'EngineFailedError';
  }
}

export class EngineInputError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'EngineInputError';
  }
}

interface Pending {
  worker: Worker;
  resolve: (value: unknown) => void;
  reject: (error: Error) => void;
  timer: NodeJS.Timeout;
}

/**
 * Runs one engine in a worker thread of this process: loaded lazily on the first call, kept for the
 * life of the process, calls answered one at a time. A worker keeps ESM-only packages and engines
 * that bundle their own TensorFlow.js apart, and keeps inference off the event loop.
 *
 * `body` is plain CommonJS run inside the worker. It must define `async function init(data)`
 * returning an object of async handlers; each handler may return `{ result, transfer }` via `transfer()`.
 */
export class EngineWorker {
  private worker: Worker | null = null;
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private loadError: string | null = null;

  constructor(
    readonly name: string,
    private readonly body: string,
    private readonly workerData: Record<string, unknown> = {},
    private readonly timeoutMs = 120_000,
    /** Calls waiting beyond this are refused at once (EngineUnavailableError "busy") instead of queueing without bound. */
    private readonly maxPending = 64,
  ) {}

  /** Calls sent and not yet answered. */
  get pendingCalls(): number {
    return this.pending.size;
  }

  /** Whether the worker thread is running (for tests and health output). */
  get started(): boolean {
    return this.worker !== null;
  }

  /**
   * One call, under the shared engine limiter (per key and per process). When `opts.signal` aborts,
   * a call the worker has not started yet is dropped there; one already running finishes (a worker
   * cannot be interrupted without losing its loaded models) and is answered with EngineAbortedError.
   */
  call<T>(
    method: string,
    args: unknown[] = [],
    transferList: ArrayBuffer[] = [],
    opts: EngineCallOptions = {},
  ): Promise<T> {
    if (this.loadError) return Promise.reject(new EngineUnavailableError(this.name, this.loadError));
    return limitEngineWork(opts, (signal) => this.send<T>(method, args, transferList, signal));
  }

  private send<T>(method: string, args: unknown[], transferList: ArrayBuffer[], signal: AbortSignal): Promise<T> {
    if (this.loadError) return Promise.reject(new EngineUnavailableError(this.name, this.loadError));
    if (this.pending.size >= this.maxPending)
      return Promise.reject(new EngineUnavailableError(this.name, `busy: ${this.pending.size} calls waiting`));
    const worker = this.ensureWorker();
    const id = this.nextId++;
    return new Promise<T>((rawResolve, rawReject) => {
      const onAbort = () => {
        if (this.pending.has(id)) worker.postMessage({ cancel: id });
      };
      signal.addEventListener('abort', onAbort, { once: true });
      const resolve = (value: T) => {
        signal.removeEventListener('abort', onAbort);
        if (signal.aborted) rawReject(new EngineAbortedError());
        else rawResolve(value);
      };
      const reject = (error: Error) => {
        signal.removeEventListener('abort', onAbort);
        rawReject(signal.aborted ? new EngineAbortedError() : error);
      };
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new EngineUnavailableError(this.name, `no answer within ${this.timeoutMs} ms`));
        // A stuck engine is restarted on the next call rather than trusted again.
        if (this.worker === worker) void this.close();
      }, this.timeoutMs);
      timer.unref();
      // The worker answers with what the engine's method returned: the caller names that type as T.
      this.pending.set(id, { worker, resolve: (value) => resolve(value as T), reject, timer });
      worker.ref();
      worker.postMessage({ id, method, args }, transferList);
    });
  }

  /**
   * Sends `method` to the running worker without waiting for it or taking a limiter slot: constant-time
   * bookkeeping (freeing an answer's encoder). Runs after the calls sent before it; nothing when the
   * worker is not running (its state went with it).
   */
  post(method: string, args: unknown[] = []): void {
    this.worker?.postMessage({ id: 0, method, args });
  }

  /** Stops the worker; the next call starts a fresh one. */
  async close(): Promise<void> {
    const worker = this.worker;
    this.worker = null;
    if (!worker) return;
    this.failAll(worker, new EngineUnavailableError(this.name, 'stopped'));
    await worker.terminate();
  }

  private ensureWorker(): Worker {
    if (this.worker) return this.worker;
    const worker = new Worker(WORKER_PRELUDE + this.body + WORKER_LOOP, { eval: true, workerData: this.workerData });
    worker.unref();
    worker.on(
      'message',
      (message: {
        id: number;
        ok: boolean;
        result?: unknown;
        error?: string;
        input?: boolean;
        load?: boolean;
        cancelled?: boolean;
      }) => {
        const entry = this.pending.get(message.id);
        if (!entry) return;
        this.pending.delete(message.id);
        clearTimeout(entry.timer);
        if (this.pending.size === 0) worker.unref();
        if (message.cancelled) entry.reject(new EngineAbortedError());
        else if (message.ok) entry.resolve(message.result);
        else if (message.load) {
          this.loadError = message.error ?? 'load failed';
          entry.reject(new EngineUnavailableError(this.name, this.loadError));
        } else if (message.input) entry.reject(new EngineInputError(message.error ?? 'bad input'));
        else entry.reject(new EngineFailedError(this.name, message.error ?? 'unknown error'));
      },
    );
    worker.on('error', (error) => {
      if (this.worker === worker) this.worker = null;
      this.failAll(worker, new EngineUnavailableError(this.name, error.message));
    });
    worker.on('exit', () => {
      if (this.worker === worker) this.worker = null;
      this.failAll(worker, new EngineUnavailableError(this.name, 'worker exited'));
    });
    this.worker = worker;
    return worker;
  }

  /** Fails the calls sent to `worker` (a replacement's calls are not its concern). */
  private failAll(worker: Worker, error: Error): void {
    for (const [id, entry] of this.pending) {
      if (entry.worker !== worker) continue;
      clearTimeout(entry.timer);
      this.pending.delete(id);
      entry.reject(error);
    }
  }
}

// Shared by every engine body: messaging, lazy init, one call at a time.
const WORKER_PRELUDE = `
'use strict';
const { parentPort, workerData } = require('worker_threads');
const { pathToFileURL } = require('url');
const importFile = (file) => import(pathToFileURL(file).href);
class InputError extends Error {}
const TRANSFER = Symbol('transfer');
const transfer = (result, list) => ({ [TRANSFER]: true, result, list });
`;

const WORKER_LOOP = `
let handlersPromise = null;
let queue = Promise.resolve();
const cancelled = new Set();
// Calls start in the order of their ids: a cancel for one already started is too late, and is not kept.
let lastStarted = 0;
parentPort.on('message', ({ id, method, args, cancel }) => {
  if (cancel !== undefined) {
    if (cancel > lastStarted) cancelled.add(cancel);
    return;
  }
  queue = queue.then(async () => {
    if (id > lastStarted) lastStarted = id;
    if (cancelled.delete(id)) {
      parentPort.postMessage({ id, ok: false, cancelled: true });
      return;
    }
    let handlers;
    try {
      handlersPromise = handlersPromise || init(workerData);
      handlers = await handlersPromise;
    } catch (error) {
      parentPort.postMessage({ id, ok: false, load: true, error: String((error && error.message) || error) });
      return;
    }
    try {
      if (typeof handlers[method] !== 'function') throw new Error('unknown method ' + method);
      const out = await handlers[method](...args);
      if (out && out[TRANSFER]) parentPort.postMessage({ id, ok: true, result: out.result }, out.list);
      else parentPort.postMessage({ id, ok: true, result: out });
    } catch (error) {
      parentPort.postMessage({ id, ok: false, input: error instanceof InputError, error: String((error && error.message) || error) });
    }
    cancelled.delete(id);
  });
});
`;
