// What the gateway's use-case specs (apps/ai-gateway/src/*/create-*.service.spec.ts) build their calls from:
// an API key's principal, a model's info and a call's context, as a controller would pass them.
import { AbortSource } from '@app/llm';
import { CallTimer } from '../../apps/ai-gateway/src/http/call-timer';
import type { CallContext } from '../../apps/ai-gateway/src/http/call-context';
import { RateLimits } from '../../apps/ai-gateway/src/limits/rate-limits';

/** An API key without scopes, model lists, budget or limits. */
export const keyPrincipal = {
  kind: 'api-key',
  id: 'k1',
  roles: ['api-key'],
  claims: { scopes: null, models: null, hasBudget: false, limited: false },
} as never;

/** A chat model `m` (cl100k_base, 8k context) priced 1 in / 2 out per 1k tokens; `overrides` change any field. */
export function modelInfo(overrides: Record<string, unknown> = {}) {
  return {
    name: 'm',
    kind: 'chat',
    contextLength: 8_000,
    encoding: 'cl100k_base',
    price: { inputPer1k: 1, outputPer1k: 2 },
    ownedBy: 'x',
    ...overrides,
  };
}

/** A fresh call context: the client still there, no limits written yet; `endpoint` labels its timer. */
export function callContext(requestId: string, endpoint: string): CallContext {
  return {
    requestId,
    clientGone: new AbortSource(),
    alive: () => true,
    timer: new CallTimer({ startedAt: 0 }, endpoint),
    rateLimits: new RateLimits(),
  };
}
