import type { Request, Response } from 'express';
import type { Readable, Transform } from 'node:stream';
import { TextDecoder } from 'node:util';
import * as zlib from 'node:zlib';
import { BODY_MIN_BYTES_PER_SECOND, type BodyArrival } from './body-arrival';
import type { BodyBudget } from './body-budget';

/** Writes an error in the app's own body shape (membership envelope or OpenAI error). */
export type ErrorResponder = (error: unknown, req: Request, res: Response) => void;

type Next = (err?: unknown) => void;

export interface BodyReaderOptions {
  /** Largest body, in bytes after decompression (BODY_LIMIT_BYTES): a number, or the limit of the request's route. */
  limit: number | ((req: Request) => number);
  /**
   * Largest ratio of inflated to compressed bytes read so far (BODY_INFLATE_RATIO_MAX): past it (and past
   * INFLATE_RATIO_FLOOR inflated bytes) the body is refused with 413 and inflating stops, so a client
   * makes the server inflate at most this many bytes per byte it sends. Unset: no ratio cap.
   */
  maxInflateRatio?: number;
  /** A body not received within this many ms is answered 408 and its connection closed (REQUEST_TIMEOUT_MS). */
  timeoutMs: number;
  /** Answers the 408 (the reader's caller is still waiting on the body when it fires). */
  respond: ErrorResponder;
  /**
   * Checks the JSON bytes before they are parsed (e.g. rejectDeepJson); a throw refuses the body. The
   * bytes are UTF-8: a body in another charset (UTF-16) is given as the UTF-8 of its decoded text.
   */
  verify?: (req: Request, res: Response, body: Buffer) => void;
  /**
   * Cuts a body arriving slower than BODY_MIN_BYTES_PER_SECOND on average past its grace with 408, like the
   * timeout (body-arrival.ts). Multipart bodies are left to their route's upload admission, which judges them the same.
   */
  arrival?: BodyArrival;
  /** The inflated JSON bytes being read at once, per caller (`callerOf`) and in the replica (body-budget.ts). */
  budget?: { bodies: BodyBudget; callerOf: (req: Request) => string };
}

/** Below this many inflated bytes the ratio cap does not apply: a short, repetitive JSON body may compress far better than 32:1. */
export const INFLATE_RATIO_FLOOR = 16 * 1024;

/**
 * An error shaped like body-parser's (http-errors: status, statusCode, type, expose): the apps' error
 * mapping (normalize-error.ts) answers by `type` and `status`, the way it answers body-parser's own.
 */
export function bodyError(status: number, type: string, message: string, extra?: Record<string, unknown>): Error {
  return Object.assign(new Error(message), { status, statusCode: status, type, expose: true, ...extra });
}

// A Map, not an object literal: a Content-Encoding such as "constructor" or "__proto__" must not find
// Object.prototype's members (piping the request into one of those threw, and later crashed the process).
const DECOMPRESSORS = new Map<string, () => Transform>([
  ['gzip', () => zlib.createGunzip()],
  ['deflate', () => zlib.createInflate()],
  ['br', () => zlib.createBrotliDecompress()],
  ...('createZstdDecompress' in zlib
    ? [
        ['zstd', () => (zlib as unknown as { createZstdDecompress(): Transform }).createZstdDecompress()] as [
          string,
          () => Transform,
        ],
      ]
    : []),
]);

/** The media type of a Content-Type header, lower-cased, without parameters. */
function mediaType(header: string | undefined): string {
  if (header === undefined) return '';
  const semi = header.indexOf(';');
  return (semi === -1 ? header : header.slice(0, semi)).trim().toLowerCase();
}

function charsetOf(header: string): string | undefined {
  const m = /;\s*charset\s*=\s*(?:"([^"]*)"|([^;\s]*))/i.exec(header);
  const value = m?.[1] ?? m?.[2];
  return value ? value.toLowerCase() : undefined;
}

/**
 * The request timeout for a body, and its arrival rate (`o.arrival`): a client that announces a body and then
 * sends it too slowly (or not at all) gets 408 and its connection is closed, instead of holding a socket and
 * what was read of its body. `onFire` runs first (a reader stops waiting). Returns what ends both.
 */
function guardArrival(req: Request, res: Response, o: BodyReaderOptions, onFire?: () => void): () => void {
  const cut = (error: Error) => {
    if (req.readableEnded) return;
    onFire?.();
    if (!res.headersSent) {
      res.setHeader('Connection', 'close');
      o.respond(error, req, res);
    }
    res.once('finish', () => req.socket.destroy());
    setTimeout(() => req.socket.destroy(), 1000).unref();
  };
  const timer = setTimeout(
    () => cut(bodyError(408, 'request.timeout', `Request body not received within ${o.timeoutMs} ms`)),
    o.timeoutMs,
  );
  timer.unref();
  const unwatch = isMultipart(req.headers['content-type'])
    ? undefined
    : o.arrival?.watch(req, () =>
        cut(
          bodyError(408, 'request.too.slow', `Request body arriving slower than ${BODY_MIN_BYTES_PER_SECOND} bytes/s`, {
            minBytesPerSecond: BODY_MIN_BYTES_PER_SECOND,
          }),
        ),
      );
  return () => {
    clearTimeout(timer);
    unwatch?.();
  };
}

function isMultipart(type: string | undefined): boolean {
  return mediaType(type).startsWith('multipart/');
}

/**
 * The apps' body reader, run by the pipeline as its last edge stage, before any route (one instance). JSON
 * bodies (application/json) are read and parsed here, with what body-parser's `json()` did: strict (an
 * object or array at the top), UTF-8/UTF-16 charsets (others 415), gzip/deflate/br (zstd where Node has
 * it) inflated with the limit applied to the inflated bytes (others 415), 413 over the limit, 400 for a
 * body shorter than its Content-Length or cut off, `verify` before parsing, an empty body read as {}.
 * Every other announced body (forms, multipart) passes on to its own parser with the same timeout armed.
 */
export function bodyReader(o: BodyReaderOptions) {
  return (req: Request, res: Response, next: Next): void => {
    const lengthHeader = req.headers['content-length'];
    const hasBody =
      req.headers['transfer-encoding'] !== undefined ||
      (lengthHeader !== undefined && !Number.isNaN(Number(lengthHeader)));
    if (!hasBody || req.readableEnded) return next();
    const type = req.headers['content-type'];
    if (mediaType(type) !== 'application/json') {
      if (Number(lengthHeader ?? 0) > 0 || req.headers['transfer-encoding'] !== undefined) {
        const clear = guardArrival(req, res, o);
        req.once('end', clear);
        req.once('close', clear);
        res.once('close', clear);
      }
      return next();
    }
    readJson(req, res, type!, lengthHeader, o, typeof o.limit === 'number' ? o.limit : o.limit(req), next);
  };
}

function readJson(
  req: Request,
  res: Response,
  type: string,
  lengthHeader: string | undefined,
  o: BodyReaderOptions,
  limit: number,
  next: Next,
): void {
  const charset = charsetOf(type) ?? 'utf-8';
  let decoder: TextDecoder | undefined;
  // As body-parser (RFC 7159 8.1): a JSON body is UTF-8, UTF-16 or UTF-32; UTF-32 has no decoder here.
  if (charset !== 'utf-8') {
    try {
      decoder = charset.startsWith('utf-') ? new TextDecoder(charset) : undefined;
    } catch {
      decoder = undefined;
    }
    if (decoder === undefined)
      return next(bodyError(415, 'charset.unsupported', `unsupported charset "${charset.toUpperCase()}"`, { charset }));
  }
  // An empty Content-Encoding is identity too (as body-parser: `|| 'identity'`).
  const contentEncoding = (req.headers['content-encoding'] || 'identity').toLowerCase();
  let inflater: Transform | undefined;
  const make = contentEncoding === 'identity' ? undefined : DECOMPRESSORS.get(contentEncoding);
  if (contentEncoding !== 'identity' && make === undefined)
    return next(
      bodyError(415, 'encoding.unsupported', `unsupported content encoding "${contentEncoding}"`, {
        encoding: contentEncoding,
      }),
    );
  const expected = make === undefined && lengthHeader !== undefined ? Number(lengthHeader) : undefined;
  // The caller's and the replica's room, before a byte is read (a caller refused already is refused again at once);
  // every body then takes its bytes (inflated bytes for a compressed one) as they arrive (onData): a stated length
  // takes nothing before its bytes come, so announcing large bodies and sending nothing holds no room.
  const budget = expected !== undefined && (expected === 0 || expected > limit) ? undefined : o.budget;
  const caller = budget?.callerOf(req) ?? '';
  let taken = 0;
  if (budget !== undefined) {
    const refused = budget.bodies.take(caller, 0);
    if (refused !== undefined) return refuseUnread(req, res, refused, next);
  }
  let compressed = 0;
  const countCompressed = (chunk: Buffer) => {
    compressed += chunk.length;
  };
  if (make !== undefined) {
    inflater = make();
    // Counted before the inflater sees the bytes (its output comes later: zlib works off the thread).
    if (o.maxInflateRatio !== undefined) req.on('data', countCompressed);
    req.pipe(inflater);
  }
  const source: Readable = inflater ?? req;

  const chunks: Buffer[] = [];
  let received = 0;
  let settled = false;
  const clear = guardArrival(req, res, o, () => {
    // The timeout (or the rate cut) answers; the read stops and never calls next.
    settled = true;
    detach();
  });
  const detach = () => {
    if (taken > 0) budget!.bodies.give(caller, taken);
    taken = 0;
    req.off('data', countCompressed);
    source.off('data', onData);
    source.off('end', onEnd);
    source.off('error', onError);
    req.off('close', onClose);
    if (inflater !== undefined) {
      req.unpipe(inflater);
      inflater.on('error', () => undefined);
      inflater.destroy();
    }
  };
  /**
   * Ends the read. A request that is not over yet (an error came first, or a compressed body ended
   * before the request did: bytes after the end of its stream) is read off to its end first, as
   * body-parser does, with the timeout still armed: the connection stays usable and a client that
   * never sends the rest gets the 408.
   */
  const settle = (err?: Error, body?: unknown) => {
    if (settled) return;
    settled = true;
    detach();
    const finish = () => {
      clear();
      if (err !== undefined) return next(err);
      req.body = body;
      next();
    };
    if (req.readableEnded || req.destroyed) return finish();
    let called = false;
    const done = () => {
      if (called) return;
      called = true;
      if (err === undefined && !req.complete) err = bodyError(400, 'request.aborted', 'request aborted');
      if (res.headersSent) return clear(); // the timeout answered
      finish();
    };
    req.once('end', done);
    req.once('close', done);
    req.resume();
  };
  const onData = (chunk: Buffer) => {
    received += chunk.length;
    if (received > limit)
      return settle(bodyError(413, 'entity.too.large', 'request entity too large', { limit, length: received }));
    if (
      inflater !== undefined &&
      o.maxInflateRatio !== undefined &&
      received > INFLATE_RATIO_FLOOR &&
      received > compressed * o.maxInflateRatio
    ) {
      return settle(
        bodyError(413, 'entity.ratio.exceeded', `compressed body inflates more than ${o.maxInflateRatio} times`, {
          maxRatio: o.maxInflateRatio,
          length: received,
          compressed,
        }),
      );
    }
    if (budget !== undefined) {
      const refused = budget.bodies.take(caller, chunk.length);
      if (refused !== undefined) {
        settled = true;
        detach();
        clear();
        return refuseUnread(req, res, refused, next);
      }
      taken += chunk.length;
    }
    chunks.push(chunk);
  };
  const onEnd = () => {
    if (expected !== undefined && received !== expected)
      return settle(
        bodyError(400, 'request.size.invalid', 'request size did not match content length', {
          expected,
          length: received,
        }),
      );
    const raw = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, received);
    // The check and the parser see the same text: in UTF-16 a code unit such as U+0122 has a byte that
    // reads as '"' (or '\\', '['), so a byte scanner over the raw bytes would lose track of strings.
    const decoded = decoder === undefined ? undefined : decoder.decode(raw);
    try {
      o.verify?.(req, res, decoded === undefined ? raw : Buffer.from(decoded, 'utf8'));
    } catch (e) {
      const err = e instanceof Error ? e : new Error(String(e));
      const fields = err as Error & { status?: number; type?: string };
      return settle(
        Object.assign(err, {
          status: fields.status ?? 403,
          statusCode: fields.status ?? 403,
          type: fields.type ?? 'entity.verify.failed',
          expose: true,
        }),
      );
    }
    let text = decoded ?? raw.toString('utf8');
    if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    let body: unknown;
    try {
      body = parseStrictJson(text);
    } catch (e) {
      return settle(bodyError(400, 'entity.parse.failed', (e as Error).message));
    }
    settle(undefined, body);
  };
  const onError = (e: Error) =>
    settle(bodyError(400, contentEncoding === 'identity' ? 'request.aborted' : 'entity.inflate.failed', e.message));
  const onClose = () => {
    if (!req.complete) settle(bodyError(400, 'request.aborted', 'request aborted'));
  };
  if (expected !== undefined && expected > limit) {
    return settle(
      bodyError(413, 'entity.too.large', 'request entity too large', { limit, length: expected, expected }),
    );
  }
  source.on('data', onData);
  source.on('end', onEnd);
  source.on('error', onError);
  req.on('close', onClose);
}

/**
 * Answers a body refused for the replica's memory (body-budget.ts) without reading any more of it: its
 * connection is closed after the answer (keep-alive would have to read the rest first).
 */
function refuseUnread(req: Request, res: Response, err: Error, next: Next): void {
  if (!res.headersSent) res.setHeader('Connection', 'close');
  res.once('finish', () => req.socket.destroy());
  next(err);
}

/** JSON.parse of a body that must be an object or array at the top (an empty body reads as {}). */
function parseStrictJson(text: string): unknown {
  let i = 0;
  while (i < text.length && (text[i] === ' ' || text[i] === '\t' || text[i] === '\n' || text[i] === '\r')) i++;
  if (i === text.length) {
    if (text.length === 0) return {};
    throw new SyntaxError('Unexpected end of JSON input');
  }
  if (text[i] !== '{' && text[i] !== '[')
    throw new SyntaxError(`Unexpected token '${text[i]}' at position ${i}: a JSON body is an object or an array`);
  return JSON.parse(text) as unknown;
}
