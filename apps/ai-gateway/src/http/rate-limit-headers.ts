import type { NextFunction, Request, Response } from 'express';
import { headHeaders, onHead } from '@app/platform';
import { RateLimits } from '../limits/rate-limits';

type LimitedRequest = Request & { rateLimits?: RateLimits };

/** The call's rate-limit values: the ones its authentication recorded (GatewayAuthenticator), else new ones kept on the request. */
export function rateLimitsOf(req: Request): RateLimits {
  const limited = req as LimitedRequest;
  return (limited.rateLimits ??= new RateLimits());
}

/**
 * The gateway's edge stage that writes a call's x-ratelimit-* headers (RateLimits) with its answer's head,
 * whatever answers it: the route, the error filter, or authenticate-first's refusal (a 429 carries them).
 */
export function rateLimitHeaders() {
  return (req: Request, res: Response, next: NextFunction): void => {
    onHead(res, (r) => {
      const limits = (req as LimitedRequest).rateLimits;
      if (limits !== undefined) headHeaders(r, limits.flat());
    });
    next();
  };
}
