import { ApiProperty } from '@nestjs/swagger';
import { ErrorCode } from './error-code';

export interface Envelope<T = unknown> {
  code: number;
  message: string;
  data: T;
}

/** The success envelope; `message` is the catalog's `success` in the request's language (English by default). */
export function ok<T>(data: T, message = 'success'): Envelope<T> {
  return { code: ErrorCode.OK, message, data: data === undefined ? (null as T) : data };
}

export function failure(code: number, message: string, data: unknown = null): Envelope {
  return { code, message, data };
}

/** Swagger shape of an error envelope. */
export class ErrorEnvelope {
  @ApiProperty({ example: 10000, description: 'Error code (see docs/contract/DECISIONS.md); 200 means success' })
  code: number;
  @ApiProperty({ example: 'username: must match ^[a-zA-Z0-9_]{4,20}$' })
  message: string;
  @ApiProperty({ nullable: true, example: null })
  data: unknown;
}
