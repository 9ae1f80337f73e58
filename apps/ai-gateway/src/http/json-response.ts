import type { ServerResponse } from 'http';

type HeadResponse = Pick<ServerResponse, 'writeHead' | 'end'>;

/**
 * Writes a JSON answer with the headers Express's `res.json()` sets (content type, length), without
 * its content-type negotiation and mime lookups, in one write; `extra` headers go into the same head
 * (headers set before with setHeader are kept: Node merges them with this list). `serialized`: the body's
 * JSON when the caller already made it.
 */
export function sendJson(
  res: HeadResponse,
  status: number,
  body: unknown,
  extra?: readonly string[],
  serialized?: string,
): void {
  const text = serialized ?? JSON.stringify(body);
  const head: string[] = extra ? [...extra] : [];
  head.push('Content-Type', 'application/json; charset=utf-8', 'Content-Length', String(Buffer.byteLength(text)));
  res.writeHead(status, head);
  res.end(text);
}
