/**
 * Writes a JSON answer with the headers Express's `res.json()` sets (content type, length), without
 * its content-type negotiation and mime lookups, in one write. Works on plain Node responses too.
 */
export function sendJson(res: { statusCode: number; setHeader(name: string, value: string | number): unknown; end(chunk: string): unknown }, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.statusCode = status;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', Buffer.byteLength(text));
  res.end(text);
}
