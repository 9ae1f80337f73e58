import { Injectable } from '@nestjs/common';
import type { Request, Response } from 'express';
import type { IncomingMessage, ServerResponse } from 'http';
import { authenticateRequest, Authenticator, AuthLimiter, Principal } from '@app/auth';
import type { ErrorResponder } from './body-reader';
import { pathnameOf } from './route-table';

/** Express-style middleware (also what `cors`, the body readers and multer are). */
export type Middleware = (req: Request, res: Response, next: (err?: unknown) => void) => void;

/**
 * A route served by the app's handler directly, without Express's router and Nest's per-request
 * execution context. It still gets everything every route gets: the edge stages (request id, security
 * headers, CORS, access log, metrics, app stages such as the gateway's timing), the body readers, and
 * authentication with the same function the global guard uses. Only for authenticated routes.
 */
export interface DirectRoute {
  method: 'GET' | 'POST';
  /** Path after the app's global prefix, e.g. `/v1/chat/completions` (query strings are ignored). */
  path: string;
  /** Answers the request (req.principal and req.body are set); a thrown error is answered by the app's error responder. */
  handle(req: Request & { principal: Principal }, res: Response): Promise<void>;
}

/**
 * The global Nest enhancers (APP_GUARD, APP_INTERCEPTOR, APP_PIPE, APP_FILTER) that direct routes account
 * for, and how. Any other global enhancer would skip the direct routes silently: wire() refuses to start.
 */
export const DIRECT_ROUTES_ACCOUNT_FOR: Readonly<Record<string, string>> = {
  DefaultDenyGuard: 'authenticateRequest runs before every direct route',
  PlatformThrottlerGuard: 'limits strangers on public routes only; direct routes are authenticated',
  ValidationPipe: "each direct route validates its body with its Nest route's own pipe function",
  OpenAiExceptionFilter: "errors are answered by the app's error responder (sendOpenAiError)",
  EnvelopeExceptionFilter: "errors are answered by the app's error responder (sendEnvelopeError)",
  EnvelopeInterceptor: 'the direct route answers with okEnvelope, the function the interceptor maps with',
};

interface Wiring {
  express: (req: IncomingMessage, res: ServerResponse) => void;
  prefix: string;
  edge: Middleware[];
  bodyReaders: Middleware[];
  errorResponder: ErrorResponder;
  authenticator?: Authenticator;
  limiter?: AuthLimiter;
  /** Class names of the app's global Nest enhancers (framework-internals: globalEnhancerNames). */
  globalEnhancers: string[];
}

/**
 * The app's one HTTP pipeline: the server's request handler. Every request first passes the edge stages
 * (the app's global behaviours, in order), then is answered by a direct route when one is declared for
 * its method and path, else by Express and Nest. A new global behaviour is a new edge stage: it reaches
 * every route, direct or not, without touching route code.
 */
/** What Express's app.handle sets up on a request it answers; done here for answers written outside it. */
function pair(req: Request, res: Response): void {
  req.res = res;
  res.req = req;
  res.locals ??= Object.create(null) as Record<string, unknown>;
}

@Injectable()
export class HttpPipeline {
  private readonly routes = new Map<string, DirectRoute>();
  private wiring?: Wiring;

  /** Declares a direct route (controllers call this in onModuleInit, before the app listens). */
  route(route: DirectRoute): void {
    this.routes.set(`${route.method} ${route.path}`, route);
  }

  /** The declared direct routes' methods and paths (after the global prefix). */
  declared(): Array<{ method: string; path: string }> {
    return [...this.routes.values()].map((r) => ({ method: r.method, path: r.path }));
  }

  /** Called once by configureHttpApp when the app's parts exist. */
  wire(wiring: Wiring): void {
    const unaccounted = wiring.globalEnhancers.filter((name) => !Object.prototype.hasOwnProperty.call(DIRECT_ROUTES_ACCOUNT_FOR, name));
    if (this.routes.size > 0 && unaccounted.length > 0) {
      const routes = [...this.routes.keys()].join(', ');
      throw new Error(`global ${unaccounted.join(', ')} would not reach the direct routes (${routes}): make it an edge stage (HttpPipeline), or say in DIRECT_ROUTES_ACCOUNT_FOR how direct routes do what it does`);
    }
    this.wiring = wiring;
  }

  /** The request handler of the app's HTTP server. */
  readonly handle = (req: IncomingMessage, res: ServerResponse): void => {
    const w = this.wiring;
    if (w === undefined) {
      res.writeHead(503).end(); // not wired yet: the app is still starting
      return;
    }
    const request = req as Request;
    const response = res as Response;
    let i = 0;
    const next = (err?: unknown): void => {
      if (err !== undefined) {
        pair(request, response);
        return w.errorResponder(err, request, response);
      }
      if (i < w.edge.length) return w.edge[i++](request, response, next);
      const route = this.match(request, w.prefix);
      if (route === undefined) return w.express(req, res);
      this.serve(route, request, response, w).catch((e) => w.errorResponder(e, request, response));
    };
    next();
  };

  private match(req: IncomingMessage, prefix: string): DirectRoute | undefined {
    if (this.routes.size === 0) return undefined;
    const path = pathnameOf(req.url);
    if (prefix !== '' && !path.startsWith(prefix)) return undefined;
    return this.routes.get(`${req.method} ${path.slice(prefix.length)}`);
  }

  private async serve(route: DirectRoute, req: Request, res: Response, w: Wiring): Promise<void> {
    pair(req, res);
    (req as Request & { routePattern?: string }).routePattern = w.prefix + route.path;
    // As in Express: body readers (middleware) first, then the guard, then the handler.
    for (const reader of w.bodyReaders) {
      // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- Express next(err) takes any value; it goes to the error responder as is
      await new Promise<void>((resolve, reject) => reader(req, res, (err?: unknown) => (err === undefined ? resolve() : reject(err))));
      if (res.headersSent) return; // a reader answered (body timeout)
    }
    // authenticate-first (an edge stage) has authenticated it already where the app asks for that.
    const principal = (req as Request & { principal?: Principal }).principal ?? (await authenticateRequest(req, res, w.authenticator, w.limiter));
    const authenticated = Object.assign(req, { principal });
    await route.handle(authenticated, res);
  }
}
