import type { IncomingMessage } from 'http';

/** The id the edge stage gave this request (its sane X-Request-Id, else a new UUID), when it has one. */
export function requestIdOf(req: IncomingMessage): string | undefined {
  return typeof req.id === 'string' ? req.id : undefined;
}
