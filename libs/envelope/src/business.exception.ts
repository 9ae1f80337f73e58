import { HttpException } from '@nestjs/common';
import { DEFAULT_MESSAGES, ErrorCode, httpStatusOf } from './error-code';

export interface BusinessExceptionOptions {
  /** Sets the Retry-After header (seconds). */
  retryAfterSeconds?: number;
  /** Extra payload returned as `data` of the error envelope. */
  details?: unknown;
}

/** A domain error carrying its envelope code; the HTTP status follows from the code. */
export class BusinessException extends HttpException {
  constructor(
    readonly code: ErrorCode,
    message?: string,
    readonly extras: BusinessExceptionOptions = {},
  ) {
    super(message ?? DEFAULT_MESSAGES[code] ?? 'Error', httpStatusOf(code));
  }
}
