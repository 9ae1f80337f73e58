import { Logger } from '@nestjs/common';
import { GatewayError, GatewayErrorCode } from '../errors';
import { EngineAbortedError, EngineFailedError, EngineInputError, EngineUnavailableError } from '@app/engines';
import { toGatewayError } from '../upstreams/upstream-errors';

/** Engine (libs/engines) and upstream failures of the media endpoints as catalog errors; `param` names the input. */
export function toMediaError(e: unknown, param: string): unknown {
  if (e instanceof EngineInputError) {
    const unsupported = /unsupported (audio|image) format/.test(e.message);
    return new GatewayError(unsupported ? GatewayErrorCode.UnsupportedMediaType : GatewayErrorCode.InvalidMediaInput, {
      message: e.message,
      param,
    });
  }
  if (e instanceof EngineAbortedError) return new GatewayError(GatewayErrorCode.ClientClosedRequest);
  if (e instanceof EngineUnavailableError) {
    return new GatewayError(GatewayErrorCode.EngineUnavailable, {
      engine: e.engine,
      reason: e.message.replace(/^.*unavailable: /, ''),
    });
  }
  if (e instanceof EngineFailedError) {
    new Logger('Engines').warn(e.message);
    return new GatewayError(GatewayErrorCode.EngineFailed, { engine: e.engine });
  }
  return toGatewayError(e);
}

/**
 * Aborts when the client goes away before the answer is sent (connection closed, request
 * abandoned), so engine work started for it is stopped (child processes killed).
 */
export function requestSignal(
  req: { res?: { writableFinished?: boolean; once(event: 'close', fn: () => void): unknown } } | undefined,
): AbortSignal | undefined {
  const res = req?.res;
  if (!res) return undefined;
  const controller = new AbortController();
  res.once('close', () => {
    if (!res.writableFinished) controller.abort();
  });
  return controller.signal;
}
