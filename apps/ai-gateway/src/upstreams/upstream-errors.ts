import { GatewayError, GatewayErrorCode } from '../errors';
import { CallAbortedError, NoDeploymentError, UnsupportedRequestError, UpstreamError } from '@app/llm';
import { EngineBusyError, EngineInputError } from '@app/engines';

/** Router failures (libs/llm) as catalog errors; anything else is returned unchanged. */
export function toGatewayError(e: unknown): unknown {
  if (e instanceof GatewayError) return e;
  if (e instanceof NoDeploymentError) return new GatewayError(GatewayErrorCode.NoProvider, { model: e.model });
  if (e instanceof UnsupportedRequestError)
    return new GatewayError(GatewayErrorCode.UnsupportedParameter, { message: e.message, param: e.param ?? null });
  if (e instanceof CallAbortedError) return new GatewayError(GatewayErrorCode.ClientClosedRequest);
  // A local engine's queue full for the key (429) or for the replica (503).
  if (e instanceof EngineBusyError)
    return new GatewayError(e.scope === 'key' ? GatewayErrorCode.EngineBusyForKey : GatewayErrorCode.EngineBusy, {
      detail: e.message,
    });
  // A local engine refusing what it was given (blank text for the embeddings engine): the request's input.
  if (e instanceof EngineInputError)
    return new GatewayError(GatewayErrorCode.InvalidValue, { message: `input: ${e.message}`, param: 'input' });
  if (e instanceof UpstreamError) {
    const where = e.deployment ? `upstream ${e.deployment}` : 'upstream';
    if (e.kind === 'timeout') return new GatewayError(GatewayErrorCode.UpstreamTimeout, { where, detail: e.message });
    if (e.kind === 'busy') return new GatewayError(GatewayErrorCode.UpstreamBusy, { where, detail: e.message });
    if (e.kind === 'http' && (e.status === 400 || e.status === 413 || e.status === 422)) {
      return new GatewayError(GatewayErrorCode.UpstreamRejectedRequest, {
        message: e.upstreamError?.message ?? e.message,
        code: e.upstreamError?.code,
        param: e.upstreamError?.param,
      });
    }
    // The in-process engine's queue full for the replica (LocalEmbeddingsClient), after the router's retries.
    if (e.kind === 'http' && e.status === 503 && e.upstreamError?.code === 'engine_busy')
      return new GatewayError(GatewayErrorCode.EngineBusy, { detail: e.message });
    if (e.kind === 'http' && (e.status === 401 || e.status === 403))
      return new GatewayError(GatewayErrorCode.UpstreamCredentialsRefused, { where, status: e.status });
    return new GatewayError(GatewayErrorCode.UpstreamFailed, { where, detail: e.message });
  }
  return e;
}

/** The deployment a failed routed call ended on (the router names it on UpstreamError), for the ledger. */
export function failedDeployment(e: unknown): string | null {
  return e instanceof UpstreamError ? (e.deployment ?? null) : null;
}
