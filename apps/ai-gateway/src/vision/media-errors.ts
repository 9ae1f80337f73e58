import { OpenAiError } from '@app/envelope';
import { Logger } from '@nestjs/common';
import { EngineAbortedError, EngineBusyError, EngineFailedError, EngineInputError, EngineUnavailableError } from '@app/engines';
import { toGatewayError } from '../routing/upstream-errors';

/** Engine and upstream failures of the media endpoints as OpenAI-shaped errors; `param` names the input. */
export function toMediaError(e: unknown, param: string): unknown {
  if (e instanceof EngineInputError) {
    const unsupported = /unsupported (audio|image) format/.test(e.message);
    return new OpenAiError(unsupported ? 415 : 400, e.message, { type: 'invalid_request_error', code: unsupported ? 'unsupported_media_type' : `invalid_${param}`, param });
  }
  if (e instanceof EngineBusyError) {
    // 'key': this key's share of the engines is in use (its own concurrency); 'server': every slot and the queue are full.
    return e.scope === 'key'
      ? new OpenAiError(429, `Too many concurrent engine jobs for this API key: ${e.message}`, { type: 'rate_limit_error', code: 'engine_busy', retryAfterSeconds: 1 })
      : new OpenAiError(503, `The local engines are busy: ${e.message}`, { type: 'service_unavailable', code: 'engine_busy', retryAfterSeconds: 2 });
  }
  if (e instanceof EngineAbortedError) {
    return new OpenAiError(400, 'The client closed the request', { type: 'invalid_request_error', code: 'client_closed_request' });
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

/**
 * Aborts when the client goes away before the answer is sent (connection closed, request
 * abandoned), so engine work started for it is stopped (child processes killed).
 */
export function requestSignal(req: { res?: { writableFinished?: boolean; once(event: 'close', fn: () => void): unknown } } | undefined): AbortSignal | undefined {
  const res = req?.res;
  if (!res) return undefined;
  const controller = new AbortController();
  res.once('close', () => {
    if (!res.writableFinished) controller.abort();
  });
  return controller.signal;
}
