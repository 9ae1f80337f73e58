import { ExpressAdapter } from '@nestjs/platform-express';
import * as http from 'http';
import { enableHeadHooks, enableLeanRouteHandlers, expressShapedClasses } from '../framework-internals';
import { HttpPipeline, Middleware } from './http-pipeline';

/**
 * Nest's Express adapter with the app's HTTP server built by the platform: requests and responses are
 * born with Express's prototypes (no per-request prototype swap), `onHead` hooks work, and the server's
 * request handler is the app's HttpPipeline (set by configureHttpApp; Express until then).
 */
export class PlatformExpressAdapter extends ExpressAdapter {
  private handler: (req: http.IncomingMessage, res: http.ServerResponse) => void = this.getInstance();
  private closing = false;
  /** Nest's handler for a request no route answers (a middleware of Express's stack after the routes). */
  notFoundHandler?: Middleware;

  constructor() {
    super();
    // Nest's adapter starts Express's stack with a middleware that runs its onRequest/onResponse hooks
    // (set by no part of the apps; setOnRequestHook below refuses them): without it, a route is the first
    // layer to match its path, and the pipeline can hand a request to it (http-pipeline.ts).
    const stack = this.getInstance<{ router: { stack: unknown[] } }>().router.stack;
    if (stack.length !== 1) throw new Error(`Nest's Express adapter changed: ${stack.length} layers at construction`);
    stack.length = 0;
    enableHeadHooks(this.getInstance());
    enableLeanRouteHandlers();
  }

  override setNotFoundHandler(handler: Middleware, prefix?: string): void {
    this.notFoundHandler = handler;
    super.setNotFoundHandler(handler, prefix);
  }

  /** The pipeline's edge stages (configure-http-app.ts) are where a behaviour for every request goes. */
  override setOnRequestHook(): void {
    throw new Error('request hooks are not run: add an edge stage (libs/platform/src/http/edge-stages.ts)');
  }

  override setOnResponseHook(): void {
    throw new Error('response hooks are not run: add an edge stage (libs/platform/src/http/edge-stages.ts)');
  }

  /** Routes the server's requests through the app's pipeline. */
  usePipeline(pipeline: HttpPipeline): void {
    this.handler = pipeline.handle;
  }

  override initHttpServer(options: { httpsOptions?: unknown; forceCloseConnections?: boolean }): void {
    if (options?.httpsOptions) throw new Error('HTTPS is terminated in front of the apps (docs/operations/deploy.md)');
    const classes = expressShapedClasses(this.getInstance());
    this.httpServer = http.createServer(classes, (req, res) => {
      // Closing: this answer ends its connection (no client may send another request on it).
      if (this.closing) res.shouldKeepAlive = false;
      this.handler(req, res);
    });
    if (options?.forceCloseConnections) (this as unknown as { trackOpenConnections(): void }).trackOpenConnections();
  }

  /**
   * Stops accepting and resolves once every connection is gone. Node's close() ends the keep-alive
   * connections idle at that moment; one still answering would then be kept for keepAliveTimeout (65 s)
   * after its answer. Answers written from now on end their connection, and one already answering is
   * closed as soon as it is idle.
   */
  override close(): Promise<unknown> | undefined {
    this.closing = true;
    const server = this.getHttpServer() as http.Server | undefined;
    if (server) server.keepAliveTimeout = 1;
    return super.close();
  }
}
