import { HttpStatus } from '@nestjs/common';

/** Envelope `code` values of DECISIONS.md; each maps to one HTTP status. */
export enum ErrorCode {
  OK = 200,
  BAD_REQUEST = 400,
  VALIDATION_FAILED = 10000,
  BAD_CREDENTIALS = 10002,
  CODE_INVALID = 10003,
  SEND_FAILED = 10004,
  ALREADY_TAKEN = 10005,
  ACCOUNT_LOCKED = 10008,
  UNAUTHORIZED = 401,
  FORBIDDEN = 403,
  NOT_FOUND = 404,
  CONFLICT = 409,
  PAYLOAD_TOO_LARGE = 413,
  UNSUPPORTED_MEDIA_TYPE = 415,
  TOO_MANY_REQUESTS = 429,
  INTERNAL = 500,
  SERVICE_UNAVAILABLE = 503,
}

const HTTP_STATUS: Record<number, number> = {
  [ErrorCode.VALIDATION_FAILED]: HttpStatus.BAD_REQUEST,
  [ErrorCode.BAD_CREDENTIALS]: HttpStatus.UNAUTHORIZED,
  [ErrorCode.CODE_INVALID]: HttpStatus.BAD_REQUEST,
  [ErrorCode.SEND_FAILED]: HttpStatus.BAD_GATEWAY,
  [ErrorCode.ALREADY_TAKEN]: HttpStatus.CONFLICT,
  [ErrorCode.ACCOUNT_LOCKED]: HttpStatus.LOCKED,
};

export function httpStatusOf(code: ErrorCode): number {
  return HTTP_STATUS[code] ?? (code >= 400 && code < 600 ? code : HttpStatus.BAD_REQUEST);
}

/** Default human-readable message per code, used when none is given. */
export const DEFAULT_MESSAGES: Partial<Record<ErrorCode, string>> = {
  [ErrorCode.BAD_REQUEST]: 'Malformed request',
  [ErrorCode.VALIDATION_FAILED]: 'Validation failed',
  [ErrorCode.BAD_CREDENTIALS]: 'Wrong account or password',
  [ErrorCode.CODE_INVALID]: 'Verification code is wrong, expired or used up',
  [ErrorCode.SEND_FAILED]: 'The message could not be sent',
  [ErrorCode.ALREADY_TAKEN]: 'Already taken',
  [ErrorCode.ACCOUNT_LOCKED]: 'Account locked, try again later',
  [ErrorCode.UNAUTHORIZED]: 'Authentication required',
  [ErrorCode.FORBIDDEN]: 'Not allowed',
  [ErrorCode.NOT_FOUND]: 'Not found',
  [ErrorCode.CONFLICT]: 'Conflict',
  [ErrorCode.PAYLOAD_TOO_LARGE]: 'Request too large',
  [ErrorCode.UNSUPPORTED_MEDIA_TYPE]: 'Unsupported media type',
  [ErrorCode.TOO_MANY_REQUESTS]: 'Too many requests, retry later',
  [ErrorCode.INTERNAL]: 'Internal server error',
  [ErrorCode.SERVICE_UNAVAILABLE]: 'Service unavailable',
};
