import { HttpException } from '@nestjs/common';
import { ErrorCode, httpStatusOf } from './error-code';
import { codeMessage, LocalizedText, SOURCE_LOCALE } from './i18n';

export interface BusinessExceptionOptions {
  /** Sets the Retry-After header (seconds). */
  retryAfterSeconds?: number;
  /** Extra payload returned as `data` of the error envelope. */
  details?: unknown;
}

/**
 * A domain error carrying its envelope code; the HTTP status follows from the code. The message is a
 * catalog message (`msg(key, params)`, rendered in the request's language) or, without one, the code's
 * default message. `message` (what logs show) is the English rendering. A plain string is kept for text
 * that is not ours to translate (e.g. a provider's error description): shown as is to English readers,
 * other languages get the code's default message.
 */
export class BusinessException extends HttpException {
  /** The message to render per request; undefined for a plain string. */
  readonly text?: LocalizedText;

  constructor(
    readonly code: ErrorCode,
    message?: string | LocalizedText,
    readonly extras: BusinessExceptionOptions = {},
  ) {
    const text = message ?? codeMessage(code);
    super(typeof text === 'string' ? text : (text?.render(SOURCE_LOCALE) ?? 'Error'), httpStatusOf(code));
    this.text = typeof text === 'string' ? undefined : text;
  }
}
