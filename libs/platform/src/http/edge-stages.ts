import type { Request, Response } from 'express';
import { AccessLog, pickRequestId } from '../logging/logging';
import { Metrics } from '../metrics/metrics';
import type { Middleware } from './http-pipeline';
import { headHeaders } from '../framework-internals';
import { securityHeaders } from './security-headers';
import { stallCut } from './stall-cut';

type Req = Request & { routePattern?: string };

/** The route label of a finished request: the matched route pattern, never the raw URL. */
export function routeLabel(req: Req): string {
  const route = req.route as { path?: string } | undefined;
  if (route?.path) return `${req.baseUrl ?? ''}${route.path}`;
  return req.routePattern ?? 'unmatched';
}

/**
 * The platform's global behaviours, in the order they run for every request of both apps: request id
 * (X-Request-Id) and helmet's security headers, the access log line (outside /actuator/) and the request
 * metrics and the cut of an answer its client stops taking (`stallMs`: cutStalledAnswer), then CORS when
 * CORS_ORIGINS is set (it answers preflight requests itself).
 */
export function edgeStages(parts: {
  accessLog: AccessLog;
  metrics: Metrics;
  stallMs: number;
  cors?: Middleware;
}): Middleware[] {
  const headers = securityHeaders().flat();
  const cutStalled = stallCut(parts.stallMs);
  const identify: Middleware = (req: Req, res: Response, next) => {
    const id = pickRequestId(req);
    (req as { id?: string }).id = id;
    // Written with the answer's head in one writeHead call (a setHeader each shows in the gateway's profile).
    headHeaders(res, headers);
    headHeaders(res, ['X-Request-Id', id]);
    next();
  };
  const observe: Middleware = (req: Req, res: Response, next) => {
    const url = req.url ?? '';
    if (!url.includes('/actuator/')) parts.accessLog.watch(req, res, String((req as { id?: string }).id), url);
    const start = process.hrtime.bigint();
    res.once('finish', () => {
      const labels = { method: req.method, route: routeLabel(req), status: String(res.statusCode) };
      parts.metrics.requests.inc(labels);
      parts.metrics.duration.observe(labels, Number(process.hrtime.bigint() - start) / 1e9);
    });
    cutStalled(res);
    next();
  };
  return parts.cors ? [identify, observe, parts.cors] : [identify, observe];
}
