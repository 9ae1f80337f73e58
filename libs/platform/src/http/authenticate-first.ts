import type { Request, Response } from 'express';
import { authenticateRequest, Authenticator, AuthLimiter, Principal } from '@app/auth';
import type { Middleware } from './http-pipeline';
import { pathnameOf, RouteInfo } from './route-table';

/**
 * Which requests are authenticated before their body is read: `all` — every request not to a
 * `@Public()` route, unknown paths included (the gateway: every route but health and docs needs a key);
 * `routes` — requests to declared routes that are not public (membership: an unknown path keeps its 404
 * envelope, its body capped by PUBLIC_BODY_LIMIT_BYTES like any public route's).
 */
export type AuthenticateFirst = 'all' | 'routes';

/**
 * An edge stage: every request that is not to a `@Public()` route (see AuthenticateFirst) is
 * authenticated before any body reader runs, so a stranger's body is never read, inflated or parsed
 * and the refused-credential limiter (429 per address) acts first. The principal is kept on the
 * request; the global guard reuses it (authenticateRequest), so the caller is checked and counted
 * once. A refusal leaves the body unread and closes the connection after the answer (keep-alive would
 * have to read the rest of the body first).
 */
export function authenticateFirst(
  mode: AuthenticateFirst,
  route: (method: string | undefined, path: string) => RouteInfo | undefined,
  authenticator?: Authenticator,
  limiter?: AuthLimiter,
): Middleware {
  return (req: Request & { principal?: Principal }, res: Response, next) => {
    const found = route(req.method, pathnameOf(req.url));
    // Kept for the body readers' per-route limit (configure-http-app.ts): one lookup per request.
    if (found !== undefined) (req as Request & { routeInfo?: RouteInfo }).routeInfo = found;
    if (found?.public === true || (found === undefined && mode === 'routes')) return next();
    // A refusal here is answered before Express routes the request: its metrics keep the route's label.
    if (found !== undefined) (req as Request & { routePattern?: string }).routePattern = found.pattern;
    authenticateRequest(req, res, authenticator, limiter).then(
      (principal) => {
        req.principal = principal;
        next();
      },
      (e: unknown) => {
        if (announcesBody(req) && !req.readableEnded && !res.headersSent) res.setHeader('Connection', 'close');
        next(e);
      },
    );
  };
}

function announcesBody(req: Request): boolean {
  const length = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}
