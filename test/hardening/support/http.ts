// A raw HTTP/1.1 client for bad input: any bytes, any headers, bodies sent slowly, a limit on time without progress.
import * as fs from 'fs';
import * as http from 'http';

export interface RawResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  json?: any;
  ms: number;
}

export interface RawRequest {
  method: string;
  /** Path with query string, appended to the base URL as is (no normalisation, so `..` stays). */
  path: string;
  headers?: Record<string, string | string[]>;
  body?: Buffer | string;
  /** Send the body in this many pieces with `chunkDelayMs` between them (slow client). */
  chunks?: number;
  chunkDelayMs?: number;
  /** With `chunks`: the last piece waits for this (called when the others are written), so the request cannot end before it. */
  holdLastChunk?: () => Promise<unknown>;
  /**
   * The request fails with `hang` after this long without progress: no answer begun, or no new bytes of
   * one being sent (a long synthesis streams its audio as it is made: it is slow, not hung).
   */
  timeoutMs?: number;
}

export class HangError extends Error {
  constructor(
    readonly req: RawRequest,
    ms: number,
  ) {
    super(`no answer, or no new bytes of one, within ${ms} ms: ${req.method} ${req.path.slice(0, 200)}`);
  }
}

export function rawRequest(baseUrl: string, r: RawRequest): Promise<RawResponse> {
  const base = new URL(baseUrl);
  const started = Date.now();
  const timeoutMs = r.timeoutMs ?? 15_000;
  const body = r.body === undefined ? undefined : Buffer.isBuffer(r.body) ? r.body : Buffer.from(r.body);
  return new Promise((resolve, reject) => {
    let settled = false;
    const done = (f: () => void) => {
      if (!settled) {
        settled = true;
        clearTimeout(timer);
        f();
      }
    };
    const headers: Record<string, string | string[]> = { connection: 'close', ...(r.headers ?? {}) };
    if (
      body &&
      !Object.keys(headers).some((h) => h.toLowerCase() === 'content-length' || h.toLowerCase() === 'transfer-encoding')
    )
      headers['content-length'] = String(body.length);
    const req = http.request({
      host: base.hostname,
      port: base.port,
      method: r.method,
      path: base.pathname.replace(/\/$/, '') + r.path,
      headers,
      agent: false,
    });
    const timer = setTimeout(() => {
      req.destroy();
      done(() => reject(new HangError(r, timeoutMs)));
    }, timeoutMs);
    req.on('response', (res) => {
      const parts: Buffer[] = [];
      timer.refresh();
      res.on('data', (c) => {
        parts.push(c);
        timer.refresh();
      });
      res.on('error', (e) => done(() => reject(e)));
      res.on('end', () =>
        done(() => {
          const text = Buffer.concat(parts).toString('utf8');
          let json: any;
          if (/json/.test(String(res.headers['content-type'] ?? ''))) {
            try {
              json = JSON.parse(text);
            } catch {
              json = undefined;
            }
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json, ms: Date.now() - started });
        }),
      );
    });
    // The server may answer (413, 400) and close before the whole body is written: that is fine, the
    // answer still arrives; an error with no answer is reported to the caller.
    req.on('error', (e) => setTimeout(() => done(() => reject(e)), 200));
    if (!body) return void req.end();
    const pieces = Math.max(1, r.chunks ?? 1);
    if (pieces === 1) return void req.end(body);
    const size = Math.ceil(body.length / pieces);
    let i = 0;
    let hold = r.holdLastChunk;
    const next = () => {
      if (settled || req.destroyed) return;
      if (i * size >= body.length) return void req.end();
      if (hold && (i + 1) * size >= body.length) {
        const release = hold;
        hold = undefined;
        return void release().then(next, next);
      }
      req.write(body.subarray(i * size, (i + 1) * size));
      i++;
      setTimeout(next, r.chunkDelayMs ?? 50);
    };
    next();
  });
}

/** Builds a multipart/form-data body from parts, in order, duplicates allowed. */
export function multipart(
  parts: { name: string; filename?: string; contentType?: string; data: Buffer | string }[],
  boundary = `----hardening${Date.now().toString(16)}`,
  opts: { truncate?: boolean } = {},
): { body: Buffer; contentType: string } {
  const chunks: Buffer[] = [];
  for (const p of parts) {
    let head = `--${boundary}\r\nContent-Disposition: form-data; name="${p.name}"`;
    if (p.filename !== undefined) head += `; filename="${p.filename}"`;
    head += '\r\n';
    if (p.contentType) head += `Content-Type: ${p.contentType}\r\n`;
    chunks.push(
      Buffer.from(head + '\r\n', 'latin1'),
      Buffer.isBuffer(p.data) ? p.data : Buffer.from(p.data),
      Buffer.from('\r\n'),
    );
  }
  if (!opts.truncate) chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { body: Buffer.concat(chunks), contentType: `multipart/form-data; boundary=${boundary}` };
}

/** Open TCP connections of this process to a port (client side), from /proc: for leak checks. */
export function openSocketsTo(port: number): number {
  const hex = port.toString(16).toUpperCase().padStart(4, '0');
  let n = 0;
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    if (!fs.existsSync(file)) continue;
    for (const line of fs.readFileSync(file, 'utf8').split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/);
      // remote address is column 2; state 01 = ESTABLISHED, 08 = CLOSE_WAIT
      if (cols.length > 3 && cols[2].endsWith(`:${hex}`) && (cols[3] === '01' || cols[3] === '08')) n++;
    }
  }
  return n;
}
