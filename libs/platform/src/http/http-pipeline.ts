import { Injectable, NotFoundException } from '@nestjs/common';
import type { Request, Response } from 'express';
import type { IncomingMessage, ServerResponse } from 'http';
import type { ErrorResponder } from './body-reader';
import type { ExpressRoute } from './route-table';

/** Express-style middleware (also what `cors`, the body readers and multer are). */
export type Middleware = (req: Request, res: Response, next: (err?: unknown) => void) => void;

interface Wiring {
  express: (req: IncomingMessage, res: ServerResponse) => void;
  /** The app's global behaviours, in the order they run (configure-http-app.ts lists them). */
  edge: Middleware[];
  errorResponder: ErrorResponder;
  /**
   * The Express route a request goes to when it is the only layer Express's router would run for it
   * (route-table.ts, firstRoutes); undefined: Express routes the request.
   */
  route?: (req: Request) => ExpressRoute | undefined;
  /** What Express's router reaches after such a route passes the request on: Nest's not-found handler. */
  fallback?: () => Middleware | undefined;
}

/**
 * The app's HTTP server request handler: every request first passes the edge stages (request id,
 * security headers, access log, metrics, CORS, the app's own, authenticate-first, the body readers),
 * then goes to the route the controllers declare. The stages run before any route so that a refusal
 * (a preflight, a stranger's key) is answered before any body reader or route code runs.
 *
 * A request whose route is the only layer of Express's stack matching its path and method (a route with
 * a literal path; route-table.ts, firstRoutes) is handed to that route as Express's router hands it (the
 * same Route object, request fields and error path), without walking the stack (~28 path matches before
 * the gateway's chat route); every other request goes through Express's router.
 */
@Injectable()
export class HttpPipeline {
  private wiring?: Wiring;

  /** Called once by configureHttpApp when the app's parts exist. */
  wire(wiring: Wiring): void {
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
    // What Express's app.handle sets up on every request: stages answering outside Express (a body
    // reader's 408, a refusal) write with Express's response methods, which read it.
    request.res = response;
    response.req = request;
    response.locals ??= Object.create(null) as Record<string, unknown>;
    let i = 0;
    const next = (err?: unknown): void => {
      if (err !== undefined) return w.errorResponder(err, request, response);
      if (i < w.edge.length) return w.edge[i++](request, response, next);
      const route = w.route?.(request);
      if (route === undefined) return w.express(req, res);
      // What Express's router.handle sets on a request it dispatches to a route.
      request.next = routed;
      request.baseUrl = '';
      request.originalUrl ??= request.url;
      request.params = {};
      route.dispatch(request, response, routed);
    };
    // A route's handler that calls next: with an error, the app's error answer; without, no other layer
    // matches the path for this method (firstRoutes), so Express's router would go on to Nest's not-found
    // handler.
    const routed = (err?: unknown): void => {
      if (err === 'route' || err === 'router') err = undefined;
      if (err !== undefined) return w.errorResponder(err, request, response);
      const fallback = w.fallback?.();
      if (fallback === undefined) return w.errorResponder(notFound(request), request, response);
      fallback(request, response, (e?: unknown) => w.errorResponder(e ?? notFound(request), request, response));
    };
    next();
  };
}

/** Nest's answer to a request no route takes (what its not-found handler throws). */
function notFound(req: Request): Error {
  return new NotFoundException(`Cannot ${req.method} ${req.url}`);
}
