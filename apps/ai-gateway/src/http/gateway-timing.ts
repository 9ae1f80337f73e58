import type { NextFunction, Request, Response } from 'express';
import { performance } from 'perf_hooks';
import { GenAiMetrics, headHeaders, onHead } from '@app/platform';
import { CallTiming, OVERHEAD_HEADER } from './call-timer';

type TimedRequest = Request & { gatewayStartedAt?: number; gatewayMetrics?: GenAiMetrics };

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

/** The timing facts the edge stage stamped on this request (a request it did not stamp starts now). */
export function callTimingOf(req: Request): CallTiming {
  const timed = req as TimedRequest;
  return {
    startedAt: typeof timed.gatewayStartedAt === 'number' ? timed.gatewayStartedAt : performance.now(),
    metrics: timed.gatewayMetrics,
  };
}
