import { ApiResponse } from '@nestjs/swagger';
import { ErrorEnvelope } from '@app/envelope';

/** Documents one error answer of an OAuth / WeChat endpoint (envelope with its code). */
export const ApiError = (status: number, code: number, description: string) =>
  ApiResponse({ status, description: `code ${code}: ${description}`, type: ErrorEnvelope });
