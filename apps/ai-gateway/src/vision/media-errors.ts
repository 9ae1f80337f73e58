import { OpenAiError } from '@app/envelope';
import { Logger } from '@nestjs/common';
import { EngineFailedError, EngineInputError, EngineUnavailableError } from '@app/providers/engines';
import { toGatewayError } from '../routing/upstream-errors';

/** Engine and upstream failures of the media endpoints as OpenAI-shaped errors; `param` names the input. */
export function toMediaError(e: unknown, param: string): unknown {
  if (e instanceof EngineInputError) {
    const unsupported = /unsupported (audio|image) format/.test(e.message);
    return new OpenAiError(unsupported ? 415 : 400, e.message, { type: 'invalid_request_error', code: unsupported ? 'unsupported_media_type' : `invalid_${param}`, param });
  }
  if (e instanceof EngineUnavailableError) {
    return new OpenAiError(503, `The ${e.engine} engine is not available: ${e.message.replace(/^.*unavailable: /, '')}`, { type: 'service_unavailable', code: 'engine_unavailable' });
  }
  if (e instanceof EngineFailedError) {
    new Logger('Engines').warn(e.message);
    return new OpenAiError(503, `The ${e.engine} engine failed on this request; retry shortly`, { type: 'service_unavailable', code: 'engine_failed', retryAfterSeconds: 2 });
  }
  return toGatewayError(e);
}

export function serviceUnavailable(message: string): OpenAiError {
  return new OpenAiError(503, message, { type: 'service_unavailable', code: 'engine_unavailable' });
}
