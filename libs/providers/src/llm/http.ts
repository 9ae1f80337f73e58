// Pooled keep-alive HTTP to one upstream origin (undici Pool), with timeouts and error mapping.
import { Dispatcher, Pool } from 'undici';
import { CallAbortedError, parseRetryAfter, UpstreamError } from './types';

export interface UpstreamHttpOptions {
  baseUrl: string;
  connections: number;
  headers: Record<string, string>;
  timeoutMs: number;
}

export interface UpstreamResponse {
  statusCode: number;
  headers: Dispatcher.ResponseData['headers'];
  body: Dispatcher.ResponseData['body'];
  /** Ends the whole-call timer (readJson calls it once the body is read). */
  done?: () => void;
}

/**
 * What undici needs of an abort signal (`aborted`, `reason`, abort listeners), without an
 * AbortController: Node's EventTarget-based controllers were the largest single cost of a proxied call
 * after the socket writes (npm run bench --cpu-prof ai-gateway: creating one, plus listener
 * bookkeeping, ~5 % of the gateway's CPU).
 */
class CallAbort {
  aborted = false;
  reason: unknown;
  private listeners: Array<() => void> = [];

  abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    const listeners = this.listeners;
    this.listeners = [];
    for (const fn of listeners) fn();
  }

  addEventListener(_type: 'abort', fn: () => void): void {
    this.listeners.push(fn);
  }

  removeEventListener(_type: 'abort', fn: () => void): void {
    const i = this.listeners.indexOf(fn);
    if (i >= 0) this.listeners.splice(i, 1);
  }
}

/**
 * The caller's signal plus, for whole calls, a deadline: one abort source and one timer, cleared when
 * the call ends (AbortSignal.timeout + AbortSignal.any cost several times more per call, and their
 * timers stayed armed for the full timeout after the call).
 */
function callSignal(caller: AbortSignal | undefined, timeoutMs: number | undefined): { signal?: AbortSignal; timedOut: () => boolean; done: () => void } {
  if (timeoutMs === undefined) return { signal: caller, timedOut: () => false, done: () => undefined };
  const ac = new CallAbort();
  let timedOut = false;
  const onAbort = () => ac.abort(caller?.reason);
  const timer = setTimeout(() => {
    timedOut = true;
    ac.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError'));
  }, timeoutMs);
  if (caller) {
    if (caller.aborted) ac.abort(caller.reason);
    else caller.addEventListener('abort', onAbort, { once: true });
  }
  return {
    signal: ac as unknown as AbortSignal,
    timedOut: () => timedOut,
    done: () => {
      clearTimeout(timer);
      caller?.removeEventListener('abort', onAbort);
    },
  };
}

export class UpstreamHttp {
  private readonly pool: Pool;
  private readonly basePath: string;
  /** Request headers of every call (undici only reads them). */
  private readonly headers: Record<string, string>;

  constructor(private readonly opts: UpstreamHttpOptions) {
    const url = new URL(opts.baseUrl);
    this.basePath = url.pathname.replace(/\/+$/, '');
    this.headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...opts.headers };
    this.pool = new Pool(url.origin, {
      connections: opts.connections,
      keepAliveTimeout: 30_000,
      keepAliveMaxTimeout: 120_000,
      pipelining: 1,
    });
  }

  /**
   * POSTs JSON and resolves with the response once a 2xx status arrived; any other status becomes an
   * UpstreamError carrying the upstream's message and Retry-After. `wholeCall` applies timeoutMs to the
   * full exchange (non-streamed calls); otherwise it bounds the wait for headers and each body gap.
   */
  async postJson(path: string, payload: unknown, opts: { signal?: AbortSignal; timeoutMs?: number; wholeCall: boolean; headers?: Record<string, string> }): Promise<UpstreamResponse> {
    const timeoutMs = opts.timeoutMs ?? this.opts.timeoutMs;
    const call = callSignal(opts.signal, opts.wholeCall ? timeoutMs : undefined);
    const signal = call.signal;
    const timeout = { get aborted() { return call.timedOut(); } } as AbortSignal;
    let res: Dispatcher.ResponseData;
    try {
      res = await this.pool.request({
        path: this.basePath + path,
        method: 'POST',
        headers: opts.headers ? { ...this.headers, ...opts.headers } : this.headers,
        body: JSON.stringify(payload),
        signal,
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
      });
    } catch (e) {
      call.done();
      throw mapTransportError(e, opts.signal, timeout, timeoutMs);
    }
    if (res.statusCode < 200 || res.statusCode >= 300) {
      call.done();
      let text = '';
      try {
        text = await res.body.text();
      } catch {
        // body unreadable: the status alone is reported
      }
      let upstreamError: UpstreamError['upstreamError'];
      try {
        const parsed = JSON.parse(text);
        const err = parsed?.error;
        if (err && typeof err === 'object') upstreamError = { message: err.message, type: err.type, code: err.code ?? null, param: err.param ?? null };
        else if (typeof err === 'string') upstreamError = { message: err };
        else if (typeof parsed?.message === 'string') upstreamError = { message: parsed.message };
      } catch {
        // not JSON
      }
      const message = upstreamError?.message ?? (text.slice(0, 300) || `HTTP ${res.statusCode}`);
      throw new UpstreamError(`upstream returned ${res.statusCode}: ${message}`, 'http', res.statusCode, parseRetryAfter(res.headers['retry-after'] as string | undefined), upstreamError);
    }
    return { statusCode: res.statusCode, headers: res.headers, body: res.body, done: call.done };
  }

  /** Reads a JSON body, turning a broken or non-JSON body into an UpstreamError. */
  async readJson<T>(res: UpstreamResponse, signal?: AbortSignal): Promise<T> {
    let text: string;
    try {
      text = await res.body.text();
    } catch (e) {
      throw mapTransportError(e, signal, { aborted: (e as any)?.name === 'TimeoutError' || (e as any)?.cause?.name === 'TimeoutError' } as AbortSignal, this.opts.timeoutMs);
    } finally {
      res.done?.();
    }
    try {
      return JSON.parse(text) as T;
    } catch {
      throw new UpstreamError('upstream sent a body that is not JSON', 'protocol', res.statusCode);
    }
  }

  close(): Promise<void> {
    return this.pool.close();
  }
}

/** Maps undici/abort failures to CallAbortedError (client went away) or a retryable UpstreamError. */
export function mapTransportError(e: any, callerSignal: AbortSignal | undefined, timeout: AbortSignal | undefined, timeoutMs: number): Error {
  if (e instanceof UpstreamError || e instanceof CallAbortedError) return e;
  if (callerSignal?.aborted) return new CallAbortedError();
  const code: string | undefined = e?.code;
  if (timeout?.aborted || code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT' || code === 'UND_ERR_CONNECT_TIMEOUT' || e?.name === 'TimeoutError') {
    return new UpstreamError(`upstream did not answer within ${timeoutMs} ms`, 'timeout', 0);
  }
  return new UpstreamError(`upstream connection failed: ${code ?? e?.message ?? 'unknown error'}`, 'network', 0);
}
