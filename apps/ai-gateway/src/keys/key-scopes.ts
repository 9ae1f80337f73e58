import type { Principal } from '@app/auth';
import { GatewayError, GatewayErrorCode } from '../errors';
import type { LimitSet } from '../limits/limit-set';

/** Endpoint groups a key can be limited to. */
export const KEY_SCOPES = ['chat', 'embeddings', 'vision', 'speech'] as const;
export type KeyScope = (typeof KEY_SCOPES)[number];

/** What an API-key principal carries in `claims`. */
export interface ApiKeyClaims {
  name: string;
  prefix: string;
  scopes: string[] | null;
  models: string[] | null;
  /** The key's own limits. */
  limits: LimitSet;
  /** The project the key belongs to, with its limits (binding all its keys together). */
  project: { id: string; name: string; limits: LimitSet } | null;
  /** The key or its project has a budget (yuan or tokens). */
  hasBudget: boolean;
  /** The key or its project has a limit checked when a call is admitted (anything but requests per minute). */
  limited: boolean;
  /**
   * Whose turn a call takes in what the replica shares out between callers (event-loop turns, embeddings lanes,
   * upstream connections, deployment cooldowns): the project for a key in one (one tenant, however many keys it
   * holds), else the key.
   */
  share: string;
}

/**
 * The caller a call is shared out as: Principal.share, which a key's principal takes from ApiKeyClaims.share
 * (apiKeyPrincipal), so the platform's body budget counts the same caller; the principal's own id otherwise.
 */
export function shareOf(principal: Principal): string {
  return principal.share ?? principal.id;
}

export function apiKeyClaims(principal: Principal | undefined): ApiKeyClaims {
  if (!principal || principal.kind !== 'api-key') {
    throw new GatewayError(GatewayErrorCode.ApiKeyRequired);
  }
  return principal.claims as ApiKeyClaims;
}

/** 403 unless the key's scopes include `scope`. */
export function assertScope(principal: Principal | undefined, scope: KeyScope): ApiKeyClaims {
  const claims = apiKeyClaims(principal);
  if (claims.scopes && !claims.scopes.includes(scope)) {
    throw new GatewayError(GatewayErrorCode.ScopeNotAllowed, { scope });
  }
  return claims;
}

export function modelAllowed(claims: ApiKeyClaims, model: string): boolean {
  return !claims.models || claims.models.includes(model);
}

/** 403 unless the key may use `model`. */
export function assertModel(claims: ApiKeyClaims, model: string): void {
  if (!modelAllowed(claims, model)) {
    throw new GatewayError(GatewayErrorCode.ModelNotAllowed, { model });
  }
}
