import { ExpressAdapter } from '@nestjs/platform-express';
import * as http from 'http';
import { enableHeadHooks, expressShapedClasses } from '../framework-internals';
import { HttpPipeline } from './http-pipeline';

/**
 * Nest's Express adapter with the app's HTTP server built by the platform: requests and responses are
 * born with Express's prototypes (no per-request prototype swap), `onHead` hooks work, and the server's
 * request handler is the app's HttpPipeline (set by configureHttpApp; Express until then).
 */
export class PlatformExpressAdapter extends ExpressAdapter {
  private handler: (req: http.IncomingMessage, res: http.ServerResponse) => void = this.getInstance();

  constructor() {
    super();
    enableHeadHooks(this.getInstance());
  }

  /** Routes the server's requests through the app's pipeline. */
  usePipeline(pipeline: HttpPipeline): void {
    this.handler = pipeline.handle;
  }

  override initHttpServer(options: { httpsOptions?: unknown; forceCloseConnections?: boolean }): void {
    if (options?.httpsOptions) throw new Error('HTTPS is terminated in front of the apps (README, Deploy)');
    const classes = expressShapedClasses(this.getInstance());
    this.httpServer = http.createServer(classes, (req, res) => this.handler(req, res));
    if (options?.forceCloseConnections) (this as unknown as { trackOpenConnections(): void }).trackOpenConnections();
  }
}
