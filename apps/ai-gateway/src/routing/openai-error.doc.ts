import { applyDecorators } from '@nestjs/common';
import { ApiProperty, ApiResponse } from '@nestjs/swagger';

class OpenAiErrorDetail {
  @ApiProperty({ example: 'temperature: temperature must not be greater than 2' }) message: string;
  @ApiProperty({ example: 'invalid_request_error' }) type: string;
  @ApiProperty({ example: 'invalid_value', nullable: true, type: String }) code: string | null;
  @ApiProperty({ example: 'temperature', nullable: true, type: String }) param: string | null;
}

/** The OpenAI error body every gateway failure uses. */
export class OpenAiErrorResponse {
  @ApiProperty({ type: OpenAiErrorDetail }) error: OpenAiErrorDetail;
}

const DESCRIPTIONS: Record<number, string> = {
  400: 'Invalid request (`param` names the field)',
  401: 'Missing, unknown, revoked or expired key (`invalid_api_key`)',
  403: 'Key not allowed: scope or model (`scope_not_allowed`, `model_not_allowed`)',
  404: 'Unknown model or resource (`model_not_found`, `not_found`)',
  413: 'Body too large',
  429: 'Key rate limit (`rate_limit_exceeded`) or budget spent (`insufficient_quota`); `Retry-After` set',
  502: 'Every upstream deployment failed; the message carries the upstream error',
  503: 'No deployment serves the model (`no_provider`)',
  504: 'Upstream timed out (`upstream_timeout`)',
};

/** Documents the OpenAI-shaped error responses of a route. */
export function ApiOpenAiErrors(...statuses: number[]) {
  return applyDecorators(...statuses.map((status) => ApiResponse({ status, description: DESCRIPTIONS[status] ?? 'Error', type: OpenAiErrorResponse })));
}
