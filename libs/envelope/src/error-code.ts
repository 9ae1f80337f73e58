import { HttpStatus } from '@nestjs/common';

/** Envelope `code` values of docs/contract/DECISIONS.md; each maps to one HTTP status. */
export enum ErrorCode {
  OK = 200,
  BAD_REQUEST = 400,
  VALIDATION_FAILED = 10000,
  BAD_CREDENTIALS = 10002,
  CODE_INVALID = 10003,
  SEND_FAILED = 10004,
  ALREADY_TAKEN = 10005,
  ACCOUNT_LOCKED = 10008,
  /** A sensitive change needs a recent sign-in (step-up) with the member's strongest second factor. */
  STEP_UP_REQUIRED = 10010,
  /** An authenticator-app code, recovery code or passkey assertion was refused. */
  SECOND_FACTOR_INVALID = 10011,
  /** A second-factor sign-in challenge (mfaToken) is unknown, expired, used or out of attempts. */
  MFA_CHALLENGE_INVALID = 10012,
  /** A passkey registration did not verify. */
  PASSKEY_REGISTRATION_FAILED = 10013,
  UNAUTHORIZED = 401,
  FORBIDDEN = 403,
  NOT_FOUND = 404,
  /** A request body arriving too slowly (an upload below its receive-rate floor). */
  REQUEST_TIMEOUT = 408,
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
  [ErrorCode.STEP_UP_REQUIRED]: HttpStatus.FORBIDDEN,
  [ErrorCode.SECOND_FACTOR_INVALID]: HttpStatus.UNAUTHORIZED,
  [ErrorCode.MFA_CHALLENGE_INVALID]: HttpStatus.UNAUTHORIZED,
  [ErrorCode.PASSKEY_REGISTRATION_FAILED]: HttpStatus.BAD_REQUEST,
};

export function httpStatusOf(code: ErrorCode): number {
  const n: number = code;
  return HTTP_STATUS[code] ?? (n >= 400 && n < 600 ? n : HttpStatus.BAD_REQUEST);
}

// Default messages per code live in the message catalogs (i18n/messages.*.ts, keys `code.<n>`).
