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
 * The caller's signal plus, for whole calls, a deadline: one AbortController and one timer, cleared
 * when the call ends (AbortSignal.timeout + AbortSignal.any cost several times more per call, and
 * their timers stayed armed for the full timeout after the call).
 */
function callSignal(caller: AbortSignal | undefined, timeoutMs: number | undefined): { signal?: AbortSignal; timedOut: () => boolean; done: () => void } {
  if (timeoutMs === undefined) return { signal: caller, timedOut: () => false, done: () => undefined };
  const ac = new AbortController();
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
    signal: ac.signal,
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

  constructor(private readonly opts: UpstreamHttpOptions) {
    const url = new URL(opts.baseUrl);
    this.basePath = url.pathname.replace(/\/+$/, '');
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
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...this.opts.headers, ...opts.headers },
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
