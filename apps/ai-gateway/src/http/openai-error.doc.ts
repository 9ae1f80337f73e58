import { applyDecorators } from '@nestjs/common';
import { ApiProperty, ApiResponse } from '@nestjs/swagger';
import { GATEWAY_ERRORS, GatewayErrorCode, type GatewayErrorSpec } from '../errors';

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

const SUMMARIES: Record<number, string> = {
  400: 'Invalid request (`param` names the field)',
  401: 'Missing, unknown, revoked or expired key',
  403: 'Key not allowed: scope or model',
  404: 'Unknown model or resource',
  408: 'A multipart upload arriving under 16 KiB/s on average after its first 10 s',
  409: "Conflicts with the resource's current state",
  411: 'A multipart upload without Content-Length',
  413: 'Body or input too large',
  415: 'Unsupported media type',
  429: 'Key rate limit or budget spent; `Retry-After` set',
  502: 'Every upstream deployment failed; the message carries the upstream error',
  503: 'No deployment or engine serves the request',
  504: 'Upstream timed out',
};

/** The catalog's OpenAI codes answered with a status (the speech stream's own codes travel on its WebSocket only). */
function codesOf(status: number): string[] {
  const codes = new Set<string>();
  for (const [name, entry] of Object.entries(GATEWAY_ERRORS) as Array<[GatewayErrorCode, GatewayErrorSpec<unknown>]>) {
    if (entry.status !== status || name.startsWith('Stream') || name === GatewayErrorCode.ServerShutdown) continue;
    const code = typeof entry.code === 'function' ? entry.code({ param: '<input>' }) : entry.code;
    if (code) codes.add(code);
  }
  return [...codes];
}

function describe(status: number): string {
  const codes = codesOf(status);
  return `${SUMMARIES[status] ?? 'Error'}${codes.length ? ` (${codes.map((c) => `\`${c}\``).join(', ')})` : ''}`;
}

/** Documents the OpenAI-shaped error responses of a route, naming the catalog codes of each status. */
export function ApiOpenAiErrors(...statuses: number[]) {
  return applyDecorators(
    ...statuses.map((status) => ApiResponse({ status, description: describe(status), type: OpenAiErrorResponse })),
  );
}
