import * as net from 'net';
import { randomBytes } from 'crypto';
import { gzipSync } from 'zlib';

/** What a raw-socket request was answered: its status, headers (lower-cased) and JSON body. */
export interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: any;
}

/**
 * A JSON body of exactly `bytes` bytes (`{"<field>":"abab…"}`, letters at random from two), gzipped: about 7
 * inflated bytes per byte sent, under any inflate-ratio cap, so each body is held whole while read.
 */
export function gzippedJson(bytes: number, field = 'nickname'): Buffer {
  const overhead = `{"${field}":""}`.length;
  const letters = Buffer.from(randomBytes(bytes - overhead).map((b) => (b & 1 ? 0x61 : 0x62)));
  const json = Buffer.concat([Buffer.from(`{"${field}":"`), letters, Buffer.from('"}')]);
  return gzipSync(json, { level: 1 });
}

/**
 * Sends a request over its own connection with all of `body` but its last `withhold` bytes (a gzip body's
 * 8-byte trailer: everything before it inflates), which never come until `finish` is called. `answer` resolves
 * with what the server answered (it may answer before the body is complete), `closed` once the connection is
 * closed (by either side); `close` drops it.
 */
export function withheldBody(
  url: string,
  opts: { method: string; path: string; headers: Record<string, string>; body: Buffer; withhold?: number },
): { answer: Promise<RawAnswer>; sent: Promise<void>; closed: Promise<void>; finish(): void; close(): void } {
  const { hostname, port } = new URL(url);
  const socket = net.connect(Number(port), hostname);
  socket.on('error', () => undefined);
  const withhold = opts.withhold ?? 8;
  const head =
    `${opts.method} ${opts.path} HTTP/1.1\r\nHost: ${hostname}\r\n` +
    Object.entries({ ...opts.headers, 'content-length': String(opts.body.length) })
      .map(([k, v]) => `${k}: ${v}\r\n`)
      .join('') +
    '\r\n';
  const sent = new Promise<void>((resolve) =>
    socket.write(Buffer.concat([Buffer.from(head), opts.body.subarray(0, opts.body.length - withhold)]), () =>
      resolve(),
    ),
  );
  const answer = new Promise<RawAnswer>((resolve, reject) => {
    let raw = Buffer.alloc(0);
    const parse = (): RawAnswer | undefined => {
      const end = raw.indexOf('\r\n\r\n');
      if (end === -1) return undefined;
      const [statusLine, ...lines] = raw.subarray(0, end).toString('latin1').split('\r\n');
      const headers = Object.fromEntries(
        lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]),
      );
      const length = Number(headers['content-length'] ?? NaN);
      const text = raw.subarray(end + 4);
      if (!(text.length >= length)) return undefined;
      const body = text.subarray(0, length).toString('utf8');
      return { status: Number(statusLine.split(' ')[1]), headers, body: body ? JSON.parse(body) : null };
    };
    socket.on('data', (chunk: Buffer) => {
      raw = Buffer.concat([raw, chunk]);
      const parsed = parse();
      if (parsed) resolve(parsed);
    });
    socket.on('close', () => reject(new Error(`connection closed without a whole answer: ${raw.toString('latin1')}`)));
  });
  answer.catch(() => undefined);
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  return {
    answer,
    sent,
    closed,
    finish: () => void socket.write(opts.body.subarray(opts.body.length - withhold)),
    close: () => void socket.destroy(),
  };
}
