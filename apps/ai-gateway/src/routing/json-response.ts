import type { ServerResponse } from 'http';

const DEFERRED = Symbol('deferredHeaders');

type HeadResponse = Pick<ServerResponse, 'statusCode' | 'setHeader' | 'hasHeader' | 'writeHead' | 'end'>;

/**
 * Headers every answer of a request carries (helmet's, X-Request-Id), held back so the answer's head is
 * written with one writeHead of a flat [name, value, ...] list: a setHeader per header was ~4 % of a
 * proxied call's CPU (npm run bench --cpu-prof ai-gateway). sendJson writes them; any other writer of
 * the head (SSE, error answers) calls applyDeferredHeaders first.
 */
export function deferHeaders(res: object, flat: readonly string[]): void {
  (res as any)[DEFERRED] = flat;
}

/** Sets the deferred headers that are not set already (an explicit header wins), once. */
export function applyDeferredHeaders(res: Pick<ServerResponse, 'setHeader' | 'hasHeader' | 'headersSent'>): void {
  const flat: readonly string[] | undefined = (res as any)[DEFERRED];
  if (!flat) return;
  (res as any)[DEFERRED] = undefined;
  if (res.headersSent) return;
  for (let i = 0; i < flat.length; i += 2) if (!res.hasHeader(flat[i])) res.setHeader(flat[i], flat[i + 1]);
}

/**
 * Writes a JSON answer with the headers Express's `res.json()` sets (content type, length), without
 * its content-type negotiation and mime lookups, in one write; `extra` headers go into the same head.
 * Works on plain Node responses too.
 */
export function sendJson(res: HeadResponse, status: number, body: unknown, extra?: readonly string[]): void {
  const text = JSON.stringify(body);
  const deferred: readonly string[] | undefined = (res as any)[DEFERRED];
  if (deferred) (res as any)[DEFERRED] = undefined;
  const head: string[] = [];
  // A header set explicitly before (setHeader) wins over a deferred one of the same name; Node merges
  // what was set with this list.
  if (deferred) for (let i = 0; i < deferred.length; i += 2) if (!res.hasHeader(deferred[i])) head.push(deferred[i], deferred[i + 1]);
  if (extra) head.push(...extra);
  head.push('Content-Type', 'application/json; charset=utf-8', 'Content-Length', String(Buffer.byteLength(text)));
  res.writeHead(status, head);
  res.end(text);
}
