import { HttpException } from '@nestjs/common';
import { BusinessException } from './business.exception';
import { LocalizedText, msg, SOURCE_LOCALE } from './i18n';

/** One error, described transport-neutrally; each app's filter turns it into its own body shape. */
export interface NormalizedError {
  status: number;
  /** English text (logs, the gateway's OpenAI-shaped errors). */
  message: string;
  /** The same message per language (membership envelope); absent: `message` in English, the code's default otherwise. */
  text?: LocalizedText;
  /** Membership envelope code (defaults to the HTTP status). */
  code?: number;
  /** OpenAI-style `type`, `code` and `param`. */
  type?: string;
  errorCode?: string;
  param?: string | null;
  retryAfterSeconds?: number;
  details?: unknown;
  /** True for unexpected failures: message is generic and the cause is logged. */
  unexpected?: boolean;
}

/** A thrown value's or a response body's own fields, read before their types are checked. */
type Fields = Record<string, unknown>;
const fieldsOf = (v: unknown): Fields | undefined => (v && typeof v === 'object' ? (v as Fields) : undefined);

/** Maps what Express, body-parser, multer, Nest and domain code throw to a status and a safe message. */
export function normalizeError(err: unknown): NormalizedError {
  if (err instanceof BusinessException) {
    return {
      status: err.getStatus(),
      code: err.code,
      message: err.message,
      text: err.text,
      retryAfterSeconds: err.extras.retryAfterSeconds,
      details: err.extras.details,
    };
  }
  if (err instanceof HttpException) {
    const status: number = err.getStatus();
    const raw = err.getResponse();
    const body = fieldsOf(raw);
    const said = typeof raw === 'string' ? raw : Array.isArray(body?.message) ? body.message.join('; ') : body?.message;
    let message = said && typeof said === 'string' ? said : err.message;
    let text: LocalizedText | undefined;
    if (status === 404 && /^Cannot (GET|POST|PUT|PATCH|DELETE|HEAD|OPTIONS) /.test(message)) {
      text = msg('request.noRoute', { route: message.replace(/^Cannot /, '') });
      message = text.render(SOURCE_LOCALE);
    }
    if (status === 413) message = message || 'Request too large';
    // A 5xx thrown on purpose with an OpenAI `type` (gateway 502/503/504) keeps its message; others are masked.
    if (status >= 500 && typeof body?.type !== 'string')
      return { status, message: 'Internal server error', unexpected: true };
    return { status, message, text, ...(body ? pickExtras(body) : {}) };
  }
  const e = fieldsOf(err);
  // body-parser and raw-body errors carry `type` and `status`.
  if (e && typeof e.type === 'string' && typeof e.status === 'number') {
    const message = typeof e.message === 'string' ? e.message : 'Malformed request';
    switch (e.type) {
      case 'entity.parse.failed':
        return localized(400, msg('request.malformedJson'));
      case 'request.timeout':
        return { status: 408, message };
      case 'request.too.slow':
        return localized(408, msg('request.bodyTooSlow', { rate: (e.minBytesPerSecond as number) / 1024 }));
      case 'bodies.caller.busy':
        return { ...localized(429, msg('request.bodiesInFlight')), retryAfterSeconds: e.retryAfterSeconds as number };
      case 'bodies.replica.busy':
        return {
          ...localized(503, msg('request.bodiesInFlightReplica')),
          errorCode: 'server_busy',
          retryAfterSeconds: e.retryAfterSeconds as number,
        };
      case 'entity.too.deep':
        return { status: 400, message };
      case 'entity.too.large':
        return localized(413, msg('request.bodyTooLarge', { limit: e.limit as number }));
      case 'entity.too.many.members':
        return localized(413, msg('request.tooManyMembers', { limit: e.limit as number }));
      case 'entity.too.many.items':
        return localized(413, msg('request.tooManyItems', { limit: e.limit as number }));
      case 'entity.ratio.exceeded':
        return localized(413, msg('request.inflateRatioTooHigh', { maxRatio: e.maxRatio as number }));
      case 'encoding.unsupported':
      case 'charset.unsupported':
        return localized(415, msg('request.unsupportedEncoding'));
      case 'request.aborted':
        return localized(400, msg('request.aborted'));
      default:
        if (e.status >= 400 && e.status < 500) return { status: e.status, message: 'Malformed request' };
    }
  }
  // multer errors
  if (e?.name === 'MulterError') {
    if (e.code === 'LIMIT_FILE_SIZE' || e.code === 'LIMIT_FIELD_VALUE' || e.code === 'LIMIT_PART_COUNT') {
      return localized(413, msg('request.uploadTooLarge'));
    }
    return localized(400, msg('request.badMultipart', { reason: String(e.code) }));
  }
  if (isUnstorableText(err)) return localized(400, msg('request.unstorableText'));
  if (isDependencyDown(err)) return { ...localized(503, msg('request.dependencyDown')), retryAfterSeconds: 5 };
  // A statement PostgreSQL cut (DATABASE_STATEMENT_TIMEOUT_MS, libs/database): the database is busy, not the request wrong.
  if (isStatementCut(err))
    return { ...localized(503, msg('request.dependencyDown')), errorCode: 'database_timeout', retryAfterSeconds: 1 };
  if (err instanceof URIError) return localized(400, msg('request.malformedUrl'));
  return { status: 500, message: 'Internal server error', unexpected: true };
}

function localized(status: number, text: LocalizedText): NormalizedError {
  return { status, message: text.render(SOURCE_LOCALE), text };
}

function pickExtras(body: Fields): Partial<NormalizedError> {
  const extras: Partial<NormalizedError> = {};
  if (typeof body.type === 'string') extras.type = body.type;
  if (typeof body.errorCode === 'string') extras.errorCode = body.errorCode;
  if (typeof body.param === 'string') extras.param = body.param;
  if (typeof body.retryAfterSeconds === 'number') extras.retryAfterSeconds = body.retryAfterSeconds;
  return extras;
}

const DOWN_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  '57P01',
  '57P02',
  '57P03',
  '08000',
  '08003',
  '08006',
  '08001',
  '08004',
]);

/** PostgreSQL refused a value from the request (NUL byte in text, invalid byte sequence): the client's fault, a 400. */
export function isUnstorableText(err: unknown): boolean {
  for (let e = fieldsOf(err), depth = 0; e && depth < 4; e = fieldsOf(e.driverError ?? e.cause), depth++) {
    if (e.code === '22021' || e.code === '22P05') return true;
  }
  return false;
}

/** PostgreSQL cancelled the statement (57014 query_canceled: its statement_timeout, or an operator's pg_cancel_backend). */
export function isStatementCut(err: unknown): boolean {
  for (let e = fieldsOf(err), depth = 0; e && depth < 4; e = fieldsOf(e.driverError ?? e.cause), depth++) {
    if (e.code === '57014') return true;
  }
  return false;
}

/** The database or Redis is unreachable: a clean 503, not a 500. */
export function isDependencyDown(err: unknown): boolean {
  for (let e = fieldsOf(err), depth = 0; e && depth < 4; e = fieldsOf(e.driverError ?? e.cause), depth++) {
    if (typeof e.code === 'string' && DOWN_CODES.has(e.code)) return true;
    if (
      typeof e.message === 'string' &&
      /Connection terminated|timeout exceeded when trying to connect|Connection is closed|connect ECONNREFUSED/.test(
        e.message,
      )
    )
      return true;
  }
  return false;
}
