import { applyDecorators } from '@nestjs/common';
import { ApiOperation, ApiProperty, ApiPropertyOptional, ApiResponse, getSchemaPath } from '@nestjs/swagger';
import { STREAM_CLOSE } from './speech-stream.gateway';

export class StreamConfigMessage {
  @ApiProperty({ enum: ['config'] }) type: 'config';
  @ApiProperty({ description: 'API key (the WebSocket carries no Authorization header)', example: 'sk-...' })
  api_key: string;
  @ApiPropertyOptional({ example: 'en', description: 'Language code; default automatic detection (upstream)' })
  language?: string;
  @ApiPropertyOptional({ example: 16000, minimum: 8000, maximum: 48000, description: 'Of the binary PCM that follows' })
  sample_rate?: number;
  @ApiPropertyOptional({ enum: ['pcm_s16le'] }) encoding?: string;
}

export class StreamResultMessage {
  @ApiProperty({ enum: ['ready', 'partial', 'final', 'end', 'error'] }) type: string;
  @ApiPropertyOptional({ example: 'please call me tomorrow', description: 'partial / final' }) text?: string;
  @ApiPropertyOptional({ example: 2.31, description: 'partial / final: seconds from the stream start' }) start?: number;
  @ApiPropertyOptional({ example: 4.02 }) end?: number;
  @ApiPropertyOptional({ example: 5.33, description: 'end: seconds of audio received (billed)' }) duration?: number;
  @ApiPropertyOptional({ example: 'idle_timeout', description: 'error' }) code?: string;
  @ApiPropertyOptional({ description: 'error' }) message?: string;
  @ApiPropertyOptional({ description: 'ready: seconds this session may carry (limit or budget)' }) max_seconds?: number;
}

/** The OpenAPI operation of /v1/speech/stream (speech-stream.doc.controller.ts): the WebSocket protocol, described. */
export const ApiSpeechStream = () =>
  applyDecorators(
    ApiOperation({
      summary: 'Live transcription (WebSocket)',
      description:
        'Connect with a WebSocket to `{stream_url}/v1/speech/stream`. First message (text): the config below, within AI_STREAM_CONFIG_TIMEOUT_MS, ' +
        'at most PUBLIC_BODY_LIMIT_BYTES (16 KiB; larger is closed 1009 unread). A socket that ends without an accepted key counts against ' +
        'its address with refused HTTP credentials (RATE_LIMIT_PER_MINUTE); a blocked address is answered `rate_limit_exceeded`, closed 4029. ' +
        'Then binary frames of mono 16-bit little-endian PCM; `{"type":"end"}` flushes and closes with 1000. The service answers JSON messages ' +
        '(`ready`, `partial`, `final`, `end`, `error`). Close codes after an error: ' +
        Object.entries(STREAM_CLOSE)
          .map(([name, code]) => `${code} ${name}`)
          .join(', ') +
        '. `engine_busy` errors close 4029 when this key already uses its share of the local engines (AI_ENGINE_MAX_CONCURRENT_PER_KEY, ' +
        'AI_ENGINE_MAX_QUEUED_PER_KEY) and 4503 when the server has no engine slot left; a session that ends has its engine work killed. ' +
        'Billed 0.03 yuan per minute of audio received. A plain HTTP GET answers 426.',
    }),
    ApiResponse({ status: 426, description: 'Upgrade to WebSocket required' }),
    ApiResponse({
      status: 101,
      description: 'WebSocket messages: client sends the config, then audio',
      schema: { oneOf: [{ $ref: getSchemaPath(StreamConfigMessage) }, { $ref: getSchemaPath(StreamResultMessage) }] },
    }),
  );
