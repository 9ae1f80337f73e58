import type { NextFunction, Request, Response } from 'express';

/** Writes an error in the app's own body shape (membership envelope or OpenAI error). */
export type ErrorResponder = (error: unknown, req: Request, res: Response) => void;

function timeoutError(ms: number): Error {
  return Object.assign(new Error(`Request body not received within ${ms} ms`), { status: 408, statusCode: 408, type: 'request.timeout', expose: true });
}

/**
 * A client that announces a body and then sends it too slowly (or not at all) gets 408 and the
 * connection is closed, instead of holding a socket and a worker for minutes.
 */
export function bodyTimeout(ms: number, respond: ErrorResponder) {
  return (req: Request, res: Response, next: NextFunction): void => {
    const announced = Number(req.headers['content-length'] ?? 0) > 0 || req.headers['transfer-encoding'] !== undefined;
    if (!announced || req.readableEnded) return next();
    const timer = setTimeout(() => {
      if (req.readableEnded) return;
      res.setHeader('Connection', 'close');
      // Answer here: a body parser waiting on the stream would only call back once the body ends.
      if (!res.headersSent) respond(timeoutError(ms), req, res);
      res.once('finish', () => req.socket.destroy());
      setTimeout(() => req.socket.destroy(), 1000).unref();
    }, ms);
    timer.unref();
    const clear = () => clearTimeout(timer);
    req.once('end', clear);
    req.once('close', clear);
    res.once('close', clear);
    next();
  };
}
