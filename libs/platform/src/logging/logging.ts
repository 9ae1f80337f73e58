import { randomUUID } from 'crypto';
import fs from 'fs';
import type { IncomingMessage, ServerResponse } from 'http';
import type { OnApplicationShutdown } from '@nestjs/common';
import { LoggerModule } from 'nestjs-pino';
import pino, { Logger as Pino } from 'pino';
import { BaseConfig } from '../config/base.config';
import { loggedPath } from './logged-path';

export { loggedPath };

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** The request's id: its X-Request-Id when sane, else a new UUID (the caller returns it as X-Request-Id). */
export function pickRequestId(req: IncomingMessage): string {
  const given = req.headers['x-request-id'];
  return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
}

/** Echoes a sane X-Request-Id or makes one, and returns it on the response. */
export function requestId(req: IncomingMessage, res: ServerResponse): string {
  const id = pickRequestId(req);
  res.setHeader('X-Request-Id', id);
  return id;
}

/** Paths that must never reach a log line. */
export const REDACTED_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'req.headers["x-api-key"]',
  'res.headers["set-cookie"]',
  '*.password',
  '*.oldPassword',
  '*.newPassword',
  '*.token',
  '*.refreshToken',
  '*.code',
  '*.api_key',
  '*.apiKey',
  '*.clientSecret',
  '*.secret',
];

/**
 * The app's structured JSON logger options (Nest's Logger, PinoLogger): level, `app`, redaction, and
 * the `req`/`res` serializers pino-http's options gave PinoLogger's logger (a logged request shows its
 * id, method, path and address only, a response its status).
 */
function loggerOptions(config: BaseConfig, app: string): pino.LoggerOptions {
  return {
    level: config.LOG_LEVEL,
    base: { app },
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
    serializers: {
      req: (req: { id?: unknown; method?: string; url?: string; remoteAddress?: string }) => ({
        id: req.id,
        method: req.method,
        url: loggedPath(String(req.url ?? '')),
        remoteAddress: req.remoteAddress,
      }),
      res: (res: { statusCode?: number }) => ({ statusCode: res.statusCode }),
    },
  };
}

/**
 * Structured JSON logs (nestjs-pino's Logger and PinoLogger for the app's own lines). The access log is
 * AccessLogMiddleware's, not pino-http's: pino-http made a child logger per request, ran its
 * serializers over the whole request and response (headers included) and nestjs-pino ran every request
 * in an AsyncLocalStorage, which made every promise pay async_hooks. Lines logged while handling a
 * request no longer carry the request as bindings: the error lines name their `requestId` themselves.
 */
export function loggingModule(config: BaseConfig, app: string) {
  return LoggerModule.forRoot({ pinoHttp: loggerOptions(config, app), forRoutes: [] });
}

/** What an access log line holds: no headers, no body, no query string (so no redaction is needed). */
export interface AccessLogEntry {
  req: { id: string; method: string | undefined; url: string; remoteAddress: string | undefined };
  res: { statusCode: number | null };
  err?: { type: string; message: string };
  responseTime: number;
}

/** Bytes of access lines kept before they are written to stdout (one write per ~17 lines; pino's "asynchronous logging" size). */
export const ACCESS_LOG_BUFFER_BYTES = 4096;
/** Longest an access line waits in that buffer before it is written. */
export const ACCESS_LOG_FLUSH_MS = 250;
/** Most bytes of access lines kept while stdout takes none; lines past it are dropped, and counted in a line written later. */
export const ACCESS_LOG_MAX_BYTES = 4 * 1024 * 1024;

/**
 * Access lines on their way to a file descriptor (stdout), written by the event loop once ACCESS_LOG_BUFFER_BYTES
 * are kept, every ACCESS_LOG_FLUSH_MS, and at shutdown and exit. Each line handed to Node's thread pool as it came
 * (pino.destination's default) cost the gateway ~10 % of its main thread's time per chat call at c=64, a
 * synchronous write per line as much, and pino's synchronous mode with a buffer waits 100 ms on the event loop each
 * time a pipe is full, again and again (docs/operations/performance.md, "The access log"). Here a write never waits:
 * what a full pipe does not take (EAGAIN, or a part of the bytes) is kept for the next flush, up to
 * ACCESS_LOG_MAX_BYTES (then lines are dropped and counted); a descriptor that fails otherwise (a closed pipe) takes
 * no more lines. On a blocking descriptor (a file, a terminal) a write takes what a write takes.
 */
export class BufferedLines {
  private text = '';
  /** Bytes of the last write that the descriptor did not take. */
  private held: Buffer | undefined;
  private dropped = 0;
  private closed = false;

  constructor(
    private readonly fd: number,
    /** The `app` of the line that counts dropped lines. */
    private readonly app: string,
  ) {
    setInterval(() => this.flush(), ACCESS_LOG_FLUSH_MS).unref();
  }

  write(line: string): void {
    if (this.closed) return;
    if (this.text.length + (this.held?.length ?? 0) + line.length > ACCESS_LOG_MAX_BYTES) {
      this.dropped++;
      return;
    }
    this.text += line;
    if (this.text.length >= ACCESS_LOG_BUFFER_BYTES) this.flush();
  }

  /** Writes what is kept, as far as the descriptor takes it now. */
  flush(): void {
    if (this.closed) return;
    try {
      if (this.held && !this.writeHeld()) return;
      if (this.dropped > 0) {
        this.text += `{"level":40,"time":${Date.now()},"app":${JSON.stringify(this.app)},"msg":"${this.dropped} access lines dropped: stdout did not take them"}\n`;
        this.dropped = 0;
      }
      if (this.text === '') return;
      this.held = Buffer.from(this.text, 'utf8');
      this.text = '';
      this.writeHeld();
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'EAGAIN') return; // full: kept for the next flush
      this.closed = true; // a closed pipe or a bad descriptor: nothing more to write to
      this.text = '';
      this.held = undefined;
    }
  }

  /** Writes the held bytes; true when all were taken. */
  private writeHeld(): boolean {
    const bytes = this.held!;
    const n = fs.writeSync(this.fd, bytes);
    this.held = n < bytes.length ? bytes.subarray(n) : undefined;
    return this.held === undefined;
  }
}

let stdoutLines: BufferedLines | undefined;

/** The access lines' way to stdout: one per process (both apps and every AccessLog share it), flushed at exit. */
function stdoutAccessLines(app: string): BufferedLines {
  if (!stdoutLines) {
    const lines = new BufferedLines(1, app);
    process.on('exit', () => lines.flush());
    stdoutLines = lines;
  }
  return stdoutLines;
}

/** Where the access lines go: one pino logger without per-request children (same line shape as pino-http wrote). */
export class AccessLog implements OnApplicationShutdown {
  readonly logger: Pino;
  /** Where this logger's lines go (stdout unless given): the access lines are written to it directly. */
  private readonly stream: pino.DestinationStream;
  /** `,"app":"..."`: the bindings pino writes after `time` on each of this logger's lines (base: {app}). */
  private readonly bindings: string;

  constructor(level: string, app: string, destination?: pino.DestinationStream) {
    this.stream = destination ?? stdoutAccessLines(app);
    this.logger = pino({ level, base: { app } }, this.stream);
    this.bindings = `,"app":${JSON.stringify(app)}`;
  }

  /**
   * The line pino would write for `entry` (no error) and `msg`, built directly and handed to the
   * logger's stream: pino's generic serialization of the nested objects is paid on every call. Same
   * bytes as pino's (logging.spec.ts).
   */
  private write(level: 'info' | 'warn', entry: AccessLogEntry, msg: string): void {
    const line = `{"level":${this.logger.levels.values[level]},"time":${Date.now()}${this.bindings},"req":${JSON.stringify(entry.req)},"res":{"statusCode":${entry.res.statusCode}},"responseTime":${entry.responseTime},"msg":"${msg}"}\n`;
    this.stream.write(line);
  }

  /**
   * Watches one response and writes its line when it finishes ('request completed'), is cut short
   * ('request aborted') or fails (5xx or a socket error: 'request errored'); level error for those, warn
   * for 4xx, info otherwise. `url` is the logged path (its query string and secret segments are
   * dropped here, see loggedPath).
   */
  watch(req: IncomingMessage, res: ServerResponse, id: string, url: string): void {
    const started = Date.now();
    const path = loggedPath(url);
    const done = (err?: Error) => {
      res.removeListener('close', done);
      res.removeListener('finish', done);
      res.removeListener('error', done);
      const status = res.statusCode;
      const failed = err !== undefined || status >= 500;
      const level = failed ? 'error' : status >= 400 ? 'warn' : 'info';
      if (!this.logger.isLevelEnabled(level)) return;
      const entry: AccessLogEntry = {
        req: { id, method: req.method, url: path, remoteAddress: req.socket?.remoteAddress },
        res: { statusCode: res.headersSent ? status : null },
        responseTime: Date.now() - started,
      };
      if (failed) {
        const e = err ?? new Error(`failed with status code ${status}`);
        entry.err = { type: e.name, message: e.message };
        this.logger[level](entry, 'request errored');
      } else {
        this.write(
          level as 'info' | 'warn',
          entry,
          !req.readableAborted && res.writableEnded ? 'request completed' : 'request aborted',
        );
      }
    };
    res.on('close', done);
    res.on('finish', done);
    res.on('error', done);
  }

  /** The lines kept so far are written (lines of calls still ending after this are written as before). */
  onApplicationShutdown(): void {
    if (this.stream === stdoutLines) stdoutLines.flush();
  }
}
