import { ArgumentsHost, Catch, ExceptionFilter, Logger } from '@nestjs/common';
import type { Request, Response } from 'express';
import { failure } from './envelope';
import { ErrorCode } from './error-code';
import { localeOf, localizedMessage, markLanguage, msg } from './i18n';
import { normalizeError } from './normalize-error';

/** Membership: every error, from any layer, leaves as the `{code, message, data}` envelope. */
@Catch()
export class EnvelopeExceptionFilter implements ExceptionFilter {
  private readonly logger = new Logger('Errors');

  catch(exception: unknown, host: ArgumentsHost): void {
    if (host.getType() !== 'http') return;
    const ctx = host.switchToHttp();
    sendEnvelopeError(exception, ctx.getRequest(), ctx.getResponse(), this.logger);
  }
}

/** The error envelope, its message in the request's language (Accept-Language, else DEFAULT_LOCALE); `code` is the same in every language. */
export function sendEnvelopeError(exception: unknown, req: Request, res: Response, logger: Logger): void {
  const e = normalizeError(exception);
  const requestId = typeof req.id === 'string' || typeof req.id === 'number' ? req.id : undefined;
  if (e.unexpected) {
    logger.error({ err: exception, requestId, path: req.path }, 'Unexpected error');
  }
  if (res.headersSent) {
    res.end();
    return;
  }
  if (e.retryAfterSeconds !== undefined)
    res.setHeader('Retry-After', String(Math.max(1, Math.ceil(e.retryAfterSeconds))));
  else if (e.status === 429 && !res.getHeader('Retry-After')) res.setHeader('Retry-After', '60');
  const code = e.code ?? (e.status === 500 ? ErrorCode.INTERNAL : e.status);
  const locale = localeOf(req);
  markLanguage(res, locale);
  const message =
    e.unexpected && requestId
      ? msg('request.internalWithId', { requestId }).render(locale)
      : localizedMessage(locale, code, e.text, e.message);
  res.status(e.status).json(failure(code, message, e.details ?? null));
}
