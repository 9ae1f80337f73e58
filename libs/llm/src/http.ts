// Pooled keep-alive HTTP to one upstream origin (undici Pool), with timeouts and error mapping.
import { Dispatcher, Pool } from 'undici';
import { defaultConnectionsPerKey, PoolShares, poolWaitExpired } from './pool-shares';
import { CallAbortedError, EmbeddingsResponse, parseRetryAfter, UpstreamError } from './types';
import { vectorWorker, VectorsAs } from './vector-worker';

export interface UpstreamHttpOptions {
  baseUrl: string;
  connections: number;
  /** Of those, at most this many for one API key's calls at once (defaultConnectionsPerKey when absent). */
  connectionsPerKey?: number;
  headers: Record<string, string>;
  timeoutMs: number;
}

export interface UpstreamResponse {
  statusCode: number;
  headers: Dispatcher.ResponseData['headers'];
  body: Dispatcher.ResponseData['body'];
}

let nextPoolId = 1;

export class UpstreamHttp {
  private readonly pool: Pool;
  /** The pool's connections shared out per key: a call waits here, in its key's turn, not in the pool's queue. */
  readonly shares: PoolShares;
  private readonly basePath: string;
  private readonly origin: string;
  /** This client's connections on the embeddings worker thread (its own, as its undici pool). */
  private readonly poolId = nextPoolId++;
  /** Request headers of every call (undici only reads them). */
  private readonly headers: Record<string, string>;

  constructor(private readonly opts: UpstreamHttpOptions) {
    const url = new URL(opts.baseUrl);
    this.basePath = url.pathname.replace(/\/+$/, '');
    this.origin = url.origin;
    this.headers = {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...opts.headers,
    };
    this.pool = new Pool(url.origin, {
      connections: opts.connections,
      keepAliveTimeout: 30_000,
      keepAliveMaxTimeout: 120_000,
      pipelining: 1,
    });
    this.shares = new PoolShares(
      opts.connections,
      Math.min(opts.connections, opts.connectionsPerKey ?? defaultConnectionsPerKey(opts.connections)),
    );
  }

  /**
   * POSTs JSON and resolves with the streamed response once a 2xx status arrived; any other status
   * becomes an UpstreamError carrying the upstream's message and Retry-After. timeoutMs bounds the wait
   * for headers and each gap in the body (a stream may run longer than it in all). Whole exchanges use
   * callJson.
   */
  async postJson(
    path: string,
    payload: unknown,
    opts: { signal?: AbortSignal; timeoutMs?: number; headers?: Record<string, string>; key?: string },
  ): Promise<UpstreamResponse> {
    const timeoutMs = opts.timeoutMs ?? this.opts.timeoutMs;
    // The connection is the call's until its body closes (read to its end, destroyed or failed).
    const leave = await this.takeShare(opts.key, opts.signal, timeoutMs);
    let res: Dispatcher.ResponseData;
    try {
      res = await this.pool.request({
        path: this.basePath + path,
        method: 'POST',
        headers: opts.headers ? { ...this.headers, ...opts.headers } : this.headers,
        body: JSON.stringify(payload),
        signal: opts.signal,
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
      });
    } catch (e) {
      leave();
      throw mapTransportError(e, opts.signal, undefined, timeoutMs);
    }
    if (res.statusCode < 200 || res.statusCode >= 300) {
      let text = '';
      try {
        text = await res.body.text();
      } catch {
        // body unreadable: the status alone is reported
      }
      leave();
      throw upstreamHttpError(res.statusCode, text, res.headers['retry-after'] as string | undefined);
    }
    res.body.once('close', leave);
    if (res.body.destroyed) leave();
    return { statusCode: res.statusCode, headers: res.headers, body: res.body };
  }

  /**
   * One whole JSON exchange (non-streamed chat, embeddings): POSTs `payload` and resolves with the
   * parsed 2xx body, all within timeoutMs (plus, up to timeoutMs more, the time its reading waited for the call's
   * own turns: `large.read`); other statuses fail as in postJson. Through undici's
   * dispatch with a handler that collects the body, not request()'s body stream, promise and
   * per-call abort signal, a large share of a proxied call's CPU (docs/operations/performance.md).
   */
  callJson<T>(
    path: string,
    payload: unknown,
    opts: {
      signal?: AbortSignal;
      timeoutMs?: number;
      headers?: Record<string, string>;
      /** The API key the call is for: it waits for a connection in that key's turn (PoolShares). */
      key?: string;
      /**
       * A 2xx body of at least `from` bytes is given to `parse` as received, in pieces (e.g. parseSliced, which
       * walks them without joining them), not joined and parsed by one JSON.parse. `read`, when given, is told the size of each piece
       * as it arrives; when it returns a promise (a turn of the call's pace: byteCharger), reading stops until
       * it settles, so an answer of megabytes arriving over a fast socket is received a slice a turn, not
       * megabytes in one turn of the event loop.
       */
      large?: {
        from: number;
        parse: (pieces: Buffer[], size: number, statusCode: number) => Promise<unknown>;
        read?: (bytes: number) => Promise<void> | undefined;
      };
    },
  ): Promise<{ statusCode: number; body: T }> {
    const timeoutMs = opts.timeoutMs ?? this.opts.timeoutMs;
    const caller = opts.signal;
    if (caller?.aborted) return Promise.reject(new CallAbortedError());
    return new Promise((resolve, reject) => {
      /** While the call waits for a connection of its key's share (PoolShares): its place in the line. */
      let waiting: object | undefined;
      /** Whether the call holds a connection of its key's share; it leaves it at its end, or once the body is in. */
      let holding = false;
      const release = () => {
        if (!holding) return;
        holding = false;
        this.shares.leave(opts.key);
      };
      let abort: ((err: Error) => void) | undefined;
      let settled = false;
      let timedOut = false;
      let statusCode = 0;
      let retryAfter: string | undefined;
      const parts: Buffer[] = [];
      let size = 0;
      let resume: (() => void) | undefined;
      const read = opts.large?.read;
      /** Whether the caller's leaving still stops the call: not once a 2xx answer is read or parsed. */
      let callerStops = true;
      /** Time reading waited for the call's own turns (paused), and since when it waits now. */
      let pausedMs = 0;
      let pausedAt: number | undefined;
      /** A turn's own failure (the pace's): the call's error as it is. */
      let turnFailure: Error | undefined;
      let started = 0;
      const finish = (err: Error | null, value?: { statusCode: number; body: T }) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        if (waiting) this.shares.cancel(opts.key, waiting);
        else release();
        caller?.removeEventListener('abort', onCallerAbort);
        if (err) reject(err);
        else resolve(value!);
      };
      const stop = (err: Error) => {
        if (abort) abort(err);
        else finish(err);
      };
      const onCallerAbort = () => stop(new CallAbortedError());
      const settledWithResult = () => {
        callerStops = false;
        caller?.removeEventListener('abort', onCallerAbort);
      };
      // The deadline moves by the time reading waited for this replica's turns (at most timeoutMs more): that
      // wait is not the upstream's, and the upstream's own time stays bounded by timeoutMs.
      const onTimeout = () => {
        const now = performance.now();
        const waited = Math.min(timeoutMs, pausedMs + (pausedAt === undefined ? 0 : now - pausedAt));
        const due = started + timeoutMs + waited;
        if (due - now >= 1) {
          timer = setTimeout(onTimeout, due - now);
          return;
        }
        timedOut = true;
        stop(new UpstreamError(`upstream did not answer within ${timeoutMs} ms`, 'timeout', 0));
      };
      let timer: NodeJS.Timeout | undefined;
      caller?.addEventListener('abort', onCallerAbort, { once: true });
      const handler: Dispatcher.DispatchHandlers = {
        onConnect: (abortCall) => {
          abort = abortCall;
          if (settled) abortCall();
        },
        onHeaders: (status, rawHeaders, resumeReading) => {
          resume = resumeReading;
          statusCode = status;
          // The upstream answers, and its body is read on the call's pace: as once the body is in (onComplete), the
          // call is settled with its result whatever the caller does meanwhile (the provider bills it); the deadline
          // still holds (a slow upstream fails as a timeout).
          if (read && status >= 200 && status < 300) settledWithResult();
          if (status < 200 || status >= 300) retryAfter = rawHeaderValue(rawHeaders, 'retry-after');
          return true;
        },
        onData: (chunk) => {
          parts.push(chunk);
          size += chunk.length;
          const due = read?.(chunk.length);
          if (!due) return true;
          // Paused (false) until the turn: undici reads nothing more from the socket meanwhile.
          pausedAt = performance.now();
          due.then(
            () => {
              pausedMs += performance.now() - pausedAt!;
              pausedAt = undefined;
              if (!settled) resume?.();
            },
            (e: unknown) => {
              pausedAt = undefined;
              turnFailure = e instanceof Error ? e : new CallAbortedError();
              stop(turnFailure);
            },
          );
          return false;
        },
        onComplete: () => {
          const large = opts.large;
          if (large && statusCode >= 200 && statusCode < 300 && size >= large.from) {
            // The upstream answered in time: parsing is this replica's work, bounded by the body, and the call
            // is settled with its result whatever the timer or the caller does meanwhile (a caller leaving now
            // would otherwise not be billed for an answer the provider bills).
            clearTimeout(timer);
            settledWithResult();
            // The connection is free again: parsing on the call's pace does not keep another key's call from it.
            release();
            large.parse(parts, size, statusCode).then(
              (body) => finish(null, { statusCode, body: body as T }),
              (e: unknown) =>
                finish(
                  e instanceof UpstreamError || e instanceof CallAbortedError
                    ? e
                    : new UpstreamError('upstream sent a body that is not JSON', 'protocol', statusCode),
                ),
            );
            return;
          }
          const text = (parts.length === 1 ? parts[0] : Buffer.concat(parts, size)).toString('utf8');
          if (statusCode < 200 || statusCode >= 300) return finish(upstreamHttpError(statusCode, text, retryAfter));
          let body: T;
          try {
            body = JSON.parse(text) as T;
          } catch {
            return finish(new UpstreamError('upstream sent a body that is not JSON', 'protocol', statusCode));
          }
          finish(null, { statusCode, body });
        },
        onError: (e) => {
          if (turnFailure) return finish(turnFailure);
          if (e instanceof UpstreamError || e instanceof CallAbortedError) return finish(e);
          // A caller who left after the answer started is not why it failed (the socket, the deadline is).
          const stopper = callerStops ? caller : undefined;
          if (stopper?.aborted) return finish(new CallAbortedError());
          finish(mapTransportError(e, stopper, { aborted: timedOut } as AbortSignal, timeoutMs));
        },
      };
      // The wait for the key's turn is not the upstream's time: the upstream's deadline starts once the call has a
      // connection. The wait has one of its own, as long: past it the call fails `busy`, having sent nothing.
      const begin = () => {
        waiting = undefined;
        holding = true;
        clearTimeout(timer);
        if (settled) return release();
        started = performance.now();
        timer = setTimeout(onTimeout, timeoutMs);
        try {
          this.pool.dispatch(
            {
              path: this.basePath + path,
              method: 'POST',
              headers: opts.headers ? { ...this.headers, ...opts.headers } : this.headers,
              body: JSON.stringify(payload),
              headersTimeout: timeoutMs,
              bodyTimeout: timeoutMs,
            },
            handler,
          );
        } catch (e) {
          handler.onError!(e as Error);
        }
      };
      waiting = this.shares.admit(opts.key, begin);
      if (!waiting) begin();
      else timer = setTimeout(() => finish(poolWaitExpired(timeoutMs)), timeoutMs);
    });
  }

  /**
   * An embeddings exchange on the embeddings worker thread (vector-worker.ts), in the key's share of the
   * deployment's connections as callJson's (given back once the body is in), the upstream's answer within timeoutMs
   * of the start (its parsing after that is not counted); errors as callJson gives them. The
   * vectors are views of the worker's shared buffer in the form `as` asks: `release` them once written.
   */
  async embeddingsOffThread(
    path: string,
    payload: unknown,
    opts: { signal?: AbortSignal; timeoutMs?: number; headers?: Record<string, string>; key?: string; as: VectorsAs },
  ): Promise<EmbeddingsResponse & { release: () => void }> {
    const timeoutMs = opts.timeoutMs ?? this.opts.timeoutMs;
    // The connection goes back to the key's share once the answer's body is in (the worker parses it after).
    const leave = await this.takeShare(opts.key, opts.signal, timeoutMs);
    try {
      return await vectorWorker().embeddings(
        {
          url: this.origin + this.basePath + path,
          headers: opts.headers ? { ...this.headers, ...opts.headers } : this.headers,
          body: JSON.stringify(payload),
          timeoutMs,
          connections: this.opts.connections,
          pool: this.poolId,
          as: opts.as,
        },
        opts.signal,
        (r) =>
          r.kind === 'http'
            ? upstreamHttpError(r.status, r.text, r.retryAfter)
            : new UpstreamError(
                r.message,
                r.kind === 'timeout' ? 'timeout' : r.kind === 'protocol' ? 'protocol' : 'network',
                r.status,
              ),
        leave,
      );
    } finally {
      leave();
    }
  }

  /**
   * A connection of the key's share, waited for at most the call's timeout (as the upstream's own wait would be),
   * and the function that gives it back (once, whoever calls it first).
   */
  private async takeShare(key: string | undefined, signal: AbortSignal | undefined, timeoutMs: number) {
    const turn = this.shares.enter(key, signal, timeoutMs);
    if (turn) await turn;
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      this.shares.leave(key);
    };
  }

  close(): Promise<void> {
    return this.pool.close();
  }
}

/** An upstream's OpenAI-style `error` object with its fields checked (a numeric code becomes text); undefined when it is not an object. */
export function upstreamErrorBody(err: unknown): UpstreamError['upstreamError'] {
  if (!err || typeof err !== 'object') return undefined;
  const e = err as { message?: unknown; type?: unknown; code?: unknown; param?: unknown };
  const str = (v: unknown) => (typeof v === 'string' ? v : undefined);
  return {
    message: str(e.message),
    type: str(e.type),
    code: typeof e.code === 'number' ? String(e.code) : (str(e.code) ?? null),
    param: str(e.param) ?? null,
  };
}

/** An upstream's non-2xx answer as an UpstreamError carrying its own message (OpenAI or plain shape) and Retry-After. */
function upstreamHttpError(status: number, text: string, retryAfter: string | undefined): UpstreamError {
  let upstreamError: UpstreamError['upstreamError'];
  try {
    const parsed = JSON.parse(text) as { error?: unknown; message?: unknown } | null;
    const err = parsed?.error;
    if (err && typeof err === 'object') upstreamError = upstreamErrorBody(err);
    else if (typeof err === 'string') upstreamError = { message: err };
    else if (typeof parsed?.message === 'string') upstreamError = { message: parsed.message };
  } catch {
    // not JSON
  }
  const message = upstreamError?.message ?? (text.slice(0, 300) || `HTTP ${status}`);
  return new UpstreamError(
    `upstream returned ${status}: ${message}`,
    'http',
    status,
    parseRetryAfter(retryAfter),
    upstreamError,
  );
}

/** The first value of a header in undici's raw [name, value, ...] list. */
function rawHeaderValue(raw: Buffer[], name: string): string | undefined {
  for (let i = 0; i + 1 < raw.length; i += 2) {
    if (raw[i].length === name.length && raw[i].toString('latin1').toLowerCase() === name)
      return raw[i + 1].toString('latin1');
  }
  return undefined;
}

/** Maps undici/abort failures to CallAbortedError (client went away) or a retryable UpstreamError. */
export function mapTransportError(
  e: unknown,
  callerSignal: AbortSignal | undefined,
  timeout: AbortSignal | undefined,
  timeoutMs: number,
): Error {
  if (e instanceof UpstreamError || e instanceof CallAbortedError) return e;
  if (callerSignal?.aborted) return new CallAbortedError();
  const failure = (e && typeof e === 'object' ? e : {}) as { code?: unknown; name?: unknown; message?: unknown };
  const code = typeof failure.code === 'string' ? failure.code : undefined;
  if (
    timeout?.aborted ||
    code === 'UND_ERR_HEADERS_TIMEOUT' ||
    code === 'UND_ERR_BODY_TIMEOUT' ||
    code === 'UND_ERR_CONNECT_TIMEOUT' ||
    failure.name === 'TimeoutError'
  ) {
    return new UpstreamError(`upstream did not answer within ${timeoutMs} ms`, 'timeout', 0);
  }
  const message = typeof failure.message === 'string' ? failure.message : undefined;
  return new UpstreamError(`upstream connection failed: ${code ?? message ?? 'unknown error'}`, 'network', 0);
}
