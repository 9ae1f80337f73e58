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
  // A large answer is written as bytes: Node writes a string of 150 KB in ~0.9 ms of the event loop, the same
  // as a Buffer in ~0.15 ms with its encoding (what does not fit the socket is sent in later turns).
  const bytes = text.length >= LARGE_ANSWER ? Buffer.from(text) : text;
  const head: string[] = extra ? [...extra] : [];
  head.push(
    'Content-Type',
    'application/json; charset=utf-8',
    'Content-Length',
    String(typeof bytes === 'string' ? Buffer.byteLength(bytes) : bytes.length),
  );
  res.writeHead(status, head);
  res.end(bytes);
}

/** Characters from which a JSON answer is encoded to a Buffer before it is written. */
const LARGE_ANSWER = 16_384;
