import type { IncomingMessage, ServerResponse } from 'http';

/** An async handler for http.createServer: a rejection answers 500 (or ends a started answer) instead of going unhandled. */
export function asyncHandler(handler: (req: IncomingMessage, res: ServerResponse) => Promise<unknown>) {
  return (req: IncomingMessage, res: ServerResponse): void => {
    handler(req, res).catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
      res.end(err instanceof Error ? err.message : 'handler failed');
    });
  };
}
