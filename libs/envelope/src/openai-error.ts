import { ArgumentsHost, Catch, ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import type { Request, Response } from 'express';
import { normalizeError } from './normalize-error';

export interface OpenAiErrorBody {
  error: { message: string; type: string; code: string | null; param: string | null };
}

/** An OpenAI-style API error: `{"error": {"message", "type", "code", "param"}}` with a real status. */
export class OpenAiError extends HttpException {
  constructor(
    status: number,
    message: string,
    readonly details: { type?: string; code?: string | null; param?: string | null; retryAfterSeconds?: number; shouldRetry?: boolean } = {},
  ) {
    super({ message, type: details.type, errorCode: details.code ?? undefined, param: details.param ?? undefined, retryAfterSeconds: details.retryAfterSeconds }, status);
  }
}

const DEFAULT_TYPE: Record<number, [string, string | null]> = {
  400: ['invalid_request_error', null],
  401: ['invalid_request_error', 'invalid_api_key'],
  403: ['permission_error', 'forbidden'],
  404: ['invalid_request_error', 'not_found'],
  405: ['invalid_request_error', 'method_not_allowed'],
  413: ['invalid_request_error', 'payload_too_large'],
  415: ['invalid_request_error', 'unsupported_media_type'],
  429: ['rate_limit_exceeded', 'rate_limit_exceeded'],
  500: ['server_error', null],
  502: ['upstream_error', 'upstream_error'],
  503: ['service_unavailable', 'no_provider'],
  504: ['timeout', 'upstream_timeout'],
};

/**
 * Error codes of configuration faults: no retry can fix them (the model has no deployment, the engine is
 * not installed or disabled), so the answer says `x-should-retry: false`. The official OpenAI SDKs obey
 * that header before their status rule (they retry 408, 409, 429 and every 5xx otherwise, twice by
 * default), so a client does not send a configuration error three times.
 */
export const NOT_RETRYABLE_CODES: ReadonlySet<string> = new Set(['no_provider', 'engine_unavailable']);

/** `false` when retrying this error cannot help (explicit `shouldRetry: false`, or a NOT_RETRYABLE_CODES code). */
export function shouldRetryError(exception: unknown): boolean | undefined {
  if (!(exception instanceof OpenAiError)) return undefined;
  if (exception.details.shouldRetry !== undefined) return exception.details.shouldRetry;
  return exception.details.code && NOT_RETRYABLE_CODES.has(exception.details.code) ? false : undefined;
}

export function openAiErrorBody(exception: unknown): { status: number; body: OpenAiErrorBody; retryAfterSeconds?: number; unexpected?: boolean } {
  const e = normalizeError(exception);
  const [type, code] = DEFAULT_TYPE[e.status] ?? (e.status >= 500 ? ['server_error', null] : ['invalid_request_error', null]);
  return {
    status: e.status,
    retryAfterSeconds: e.retryAfterSeconds,
    unexpected: e.unexpected,
    body: { error: { message: e.message, type: e.type ?? type, code: e.errorCode ?? code, param: e.param ?? null } },
  };
}

/** AI gateway: every error leaves in the OpenAI error shape. */
@Catch()
export class OpenAiExceptionFilter implements ExceptionFilter {
  private readonly logger = new Logger('Errors');

  catch(exception: unknown, host: ArgumentsHost): void {
    if (host.getType() !== 'http') return;
    const ctx = host.switchToHttp();
    sendOpenAiError(exception, ctx.getRequest(), ctx.getResponse(), this.logger);
  }
}

export function sendOpenAiError(exception: unknown, req: Request, res: Response, logger: Logger): void {
  const { status, body, retryAfterSeconds, unexpected } = openAiErrorBody(exception);
  const requestId = (req as any).id;
  if (unexpected) logger.error({ err: exception, requestId, path: req.path }, 'Unexpected error');
  if (res.headersSent) {
    res.end();
    return;
  }
  if (retryAfterSeconds !== undefined) res.setHeader('Retry-After', String(Math.max(1, Math.ceil(retryAfterSeconds))));
  else if (status === 429 && !res.getHeader('Retry-After')) res.setHeader('Retry-After', '60');
  if (shouldRetryError(exception) === false) res.setHeader('x-should-retry', 'false');
  if (unexpected && requestId) body.error.message = `Internal server error (request id ${requestId})`;
  res.status(status).json(body);
}
