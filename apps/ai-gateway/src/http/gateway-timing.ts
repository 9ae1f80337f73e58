import type { NextFunction, Request, Response } from 'express';
import { performance } from 'perf_hooks';
import { GenAiMetrics, headHeaders, onHead } from '@app/platform';

export const OVERHEAD_HEADER = 'X-Gateway-Overhead-Ms';

/**
 * Headers an error response of a proxied call carries: the overhead. (A spent budget's `x-should-retry: false`
 * comes from the error catalog, on every path: libs/envelope/src/gateway-errors.ts.)
 */
export function errorHeaders(res: { headersSent: boolean; setHeader(name: string, value: string): unknown }, timer: CallTimer): void {
  if (res.headersSent) return;
  res.setHeader(OVERHEAD_HEADER, timer.overheadMs());
}

type TimedRequest = Request & { gatewayStartedAt?: number; gatewayMetrics?: GenAiMetrics };

/** `endpoint` label of ai_gateway_overhead_seconds: the routes that call upstreams, by a fixed name (never a caller's path). */
const ENDPOINTS: Record<string, string> = {
  '/v1/chat/completions': 'chat.completions',
  '/v1/responses': 'responses',
  '/v1/completions': 'completions',
  '/v1/embeddings': 'embeddings',
};

/**
 * The gateway's edge stage: stamps when the gateway started handling a /v1 request, and makes sure
 * every answer carries the overhead header: handlers that call upstreams set it themselves (upstream
 * waits excluded); any other answer (validation, auth, errors before a call) gets the elapsed time.
 * `metrics`: where CallTimer reports the overhead of calls (ai_gateway_overhead_seconds).
 */
export function gatewayTiming(metrics?: GenAiMetrics) {
  return (req: Request, res: Response, next: NextFunction): void => {
    if (req.url.startsWith('/v1/')) {
      const started = performance.now();
      (req as TimedRequest).gatewayStartedAt = started;
      (req as TimedRequest).gatewayMetrics = metrics;
      // Pending, so a handler's own value (set or given with its head) wins.
      onHead(res, (r) => headHeaders(r, [OVERHEAD_HEADER, (performance.now() - started).toFixed(2)]));
    }
    next();
  };
}

/** Tracks time spent waiting on upstreams so the rest can be reported as gateway overhead. */
export class CallTimer {
  private readonly start: number;
  private upstreamMs = 0;
  private waitingSince?: number;
  private readonly metrics?: GenAiMetrics;
  private readonly endpoint: string;
  private reported = false;

  constructor(req: Request) {
    const timed = req as TimedRequest;
    this.start = typeof timed.gatewayStartedAt === 'number' ? timed.gatewayStartedAt : performance.now();
    this.metrics = timed.gatewayMetrics;
    this.endpoint = ENDPOINTS[req.path] ?? 'other';
  }

  upstreamStarted(): void {
    this.waitingSince = performance.now();
  }

  upstreamDone(): void {
    if (this.waitingSince !== undefined) this.upstreamMs += performance.now() - this.waitingSince;
    this.waitingSince = undefined;
  }

  /**
   * Milliseconds inside the gateway so far (total minus upstream waits), two decimals. The first value
   * taken (the one the answer's head carries) is also observed in ai_gateway_overhead_seconds.
   */
  overheadMs(): string {
    const now = performance.now();
    const waiting = this.waitingSince !== undefined ? now - this.waitingSince : 0;
    const ms = Math.max(0, now - this.start - this.upstreamMs - waiting);
    if (!this.reported && this.metrics) {
      this.reported = true;
      this.metrics.gatewayOverhead(this.endpoint, ms / 1000);
    }
    return ms.toFixed(2);
  }
}
