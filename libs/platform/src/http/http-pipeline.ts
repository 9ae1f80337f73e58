import { Injectable } from '@nestjs/common';
import type { Request, Response } from 'express';
import type { IncomingMessage, ServerResponse } from 'http';
import type { ErrorResponder } from './body-reader';

/** Express-style middleware (also what `cors`, the body readers and multer are). */
export type Middleware = (req: Request, res: Response, next: (err?: unknown) => void) => void;

interface Wiring {
  express: (req: IncomingMessage, res: ServerResponse) => void;
  /** The app's global behaviours, in the order they run (configure-http-app.ts lists them). */
  edge: Middleware[];
  errorResponder: ErrorResponder;
}

/**
 * The app's HTTP server request handler: every request first passes the edge stages (request id,
 * security headers, access log, metrics, CORS, the app's own, authenticate-first), then goes to Express
 * and Nest, where the controllers declare every route. The stages run before Express's router so that
 * a refusal (a preflight, a stranger's key) is answered before any body reader or route code runs.
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
    let i = 0;
    const next = (err?: unknown): void => {
      if (err !== undefined) {
        // What Express's app.handle sets up on a request it answers; this answer is written outside it.
        request.res = response;
        response.req = request;
        response.locals ??= Object.create(null) as Record<string, unknown>;
        return w.errorResponder(err, request, response);
      }
      if (i < w.edge.length) return w.edge[i++](request, response, next);
      w.express(req, res);
    };
    next();
  };
}
