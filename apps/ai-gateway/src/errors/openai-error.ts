import { ArgumentsHost, Catch, ExceptionFilter, Logger } from '@nestjs/common';
import type { Request, Response } from 'express';
import { sendJson } from '../http/json-response';
import { GatewayError } from './gateway-errors';
import { normalizeError } from '@app/envelope';

export interface OpenAiErrorBody {
  error: { message: string; type: string; code: string | null; param: string | null };
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

/** `false` when retrying this error cannot help (a catalog error marked `retryable: false`, a configuration fault). */
export function shouldRetryError(exception: unknown): boolean | undefined {
  return exception instanceof GatewayError ? exception.retryable : undefined;
}

/**
 * The HTTP mapping of every gateway failure: a catalog error (GatewayError) as the catalog says; anything
 * else (Nest, body-parser, multer, unexpected) by its status.
 */
export function openAiErrorBody(exception: unknown): {
  status: number;
  body: OpenAiErrorBody;
  retryAfterSeconds?: number;
  unexpected?: boolean;
} {
  if (exception instanceof GatewayError) {
    const body = {
      error: { message: exception.message, type: exception.type, code: exception.errorCode, param: exception.param },
    };
    return { status: exception.getStatus(), retryAfterSeconds: exception.retryAfterSeconds, body };
  }
  const e = normalizeError(exception);
  const [type, code] =
    DEFAULT_TYPE[e.status] ?? (e.status >= 500 ? ['server_error', null] : ['invalid_request_error', null]);
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
  const requestId = (req as Request & { id?: string }).id;
  if (unexpected) logger.error({ err: exception, requestId, path: req.path }, 'Unexpected error');
  if (res.headersSent) {
    res.end();
    return;
  }
  if (retryAfterSeconds !== undefined) res.setHeader('Retry-After', String(Math.max(1, Math.ceil(retryAfterSeconds))));
  else if (status === 429 && !res.getHeader('Retry-After')) res.setHeader('Retry-After', '60');
  if (shouldRetryError(exception) === false) res.setHeader('x-should-retry', 'false');
  if (unexpected && requestId) body.error.message = `Internal server error (request id ${requestId})`;
  // Written as sendJson writes answers (one head, no ETag or content negotiation): refusals are the bulk of an abusive caller's calls.
  sendJson(res, status, body);
}
