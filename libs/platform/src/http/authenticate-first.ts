import type { Request, Response } from 'express';
import { authenticateRequest, Authenticator, AuthLimiter, isKnownCaller, Principal } from '@app/auth';
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
 * have to read the rest of the body first), unless the caller is a known key refused by its own limits
 * and its body is small (bodyMayBeDrained): then Node drops the body and the connection is kept.
 */
export function authenticateFirst(
  mode: AuthenticateFirst,
  route: (method: string | undefined, path: string) => RouteInfo | undefined,
  authenticator?: Authenticator,
  limiter?: AuthLimiter,
  /** REQUEST_TIMEOUT_MS: a body kept to be dropped (bodyMayBeDrained) must arrive within it, or the connection is closed. */
  drainTimeoutMs = 30_000,
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
        if (!bodyMayBeDrained(req)) {
          if (!res.headersSent) res.setHeader('Connection', 'close');
        } else if (!req.readableEnded) {
          // Node drops the rest of the body after the answer; a body that does not come in time closes the connection.
          const timer = setTimeout(() => req.socket.destroy(), drainTimeoutMs);
          timer.unref();
          const clear = () => clearTimeout(timer);
          req.once('end', clear);
          req.once('close', clear);
        }
        next(e);
      },
    );
  };
}

/** Most body bytes a refused known caller's connection is kept for (read off the wire and dropped, never parsed). */
export const DRAIN_MAX_BYTES = 64 * 1024;

/**
 * Whether a refused request's connection can be kept: no body, a body already read, or a known
 * caller's (isKnownCaller: a valid key refused by its own limits) body of a stated length up to
 * DRAIN_MAX_BYTES, which Node reads off the wire and drops after the answer. A stranger's body is never
 * read: its connection is closed after the answer, as is any longer or chunked body.
 */
function bodyMayBeDrained(req: Request): boolean {
  const length = req.headers['content-length'];
  const chunked = req.headers['transfer-encoding'] !== undefined;
  if (req.readableEnded || (!chunked && (length === undefined || length === '0'))) return true;
  return !chunked && isKnownCaller(req) && /^\d{1,9}$/.test(length!) && Number(length) <= DRAIN_MAX_BYTES;
}
