import { OpenAiError } from '@app/envelope';
import { CallAbortedError, NoDeploymentError, UnsupportedRequestError, UpstreamError } from '@app/llm';

/** Maps router failures to the gateway's OpenAI-shaped errors; anything else is returned unchanged. */
export function toGatewayError(e: unknown): unknown {
  if (e instanceof OpenAiError) return e;
  if (e instanceof NoDeploymentError) {
    return new OpenAiError(503, `No provider is available for model ${e.model}`, { type: 'service_unavailable', code: 'no_provider', param: 'model' });
  }
  if (e instanceof UnsupportedRequestError) {
    return new OpenAiError(400, e.message, { type: 'invalid_request_error', code: 'unsupported_parameter', param: e.param });
  }
  if (e instanceof CallAbortedError) {
    return new OpenAiError(400, 'The client closed the request', { type: 'invalid_request_error', code: 'client_closed_request' });
  }
  if (e instanceof UpstreamError) {
    const where = e.deployment ? `upstream ${e.deployment}` : 'upstream';
    if (e.kind === 'timeout') return new OpenAiError(504, `${capitalize(where)} timed out: ${e.message}`, { type: 'timeout', code: 'upstream_timeout' });
    // The caller's request was refused as invalid by the upstream: their problem, said in the upstream's words.
    if (e.kind === 'http' && (e.status === 400 || e.status === 413 || e.status === 422)) {
      return new OpenAiError(400, e.upstreamError?.message ?? e.message, {
        type: 'invalid_request_error',
        code: e.upstreamError?.code ?? 'upstream_rejected_request',
        param: e.upstreamError?.param ?? null,
      });
    }
    // The upstream's answer to our own credentials may echo part of the provider key: not passed on.
    if (e.kind === 'http' && (e.status === 401 || e.status === 403)) {
      return new OpenAiError(502, `${capitalize(where)} refused the gateway's credentials (HTTP ${e.status}); check the provider key`, { type: 'upstream_error', code: 'upstream_error', shouldRetry: false });
    }
    return new OpenAiError(502, `${capitalize(where)} failed: ${e.message}`, { type: 'upstream_error', code: 'upstream_error' });
  }
  return e;
}

function capitalize(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}
