import { Injectable } from '@nestjs/common';
import { timingSafeEqual, createHash } from 'crypto';
import type { IncomingHttpHeaders } from 'http';
import {
  ADMIN_ROLE,
  answerAfter,
  Authenticator,
  bearerToken,
  markKnownCaller,
  Principal,
  withImpliedRoles,
} from '@app/auth';
import { GatewayError, GatewayErrorCode } from '../errors';
import { GatewayConfig } from '../config/gateway.config';
import { ApiKey } from './api-key.entity';
import { ApiKeysService } from './api-keys.service';
import { ApiKeyClaims } from './key-scopes';
import { looksLikeJwt, MembershipTokens } from './membership-tokens';
import { CallAdmission } from '../limits/call-admission';
import { HeldConnection, RefusalHold } from '../limits/refusal-hold';
import { RateLimits } from '../limits/rate-limits';
import { hasBudget, limitSetOf, limitsCall } from '../limits/limit-set';

/** What the authenticator reads on a request, and the rate-limit values it records there for the HTTP transport (http/rate-limit-headers.ts). */
type KeyedRequest = {
  headers: IncomingHttpHeaders;
  method?: string;
  path?: string;
  url?: string;
  rateLimits?: RateLimits;
  /** The request's connection: one refusal of it is held at a time (RefusalHold). */
  socket?: HeldConnection;
  /** Its route, found before authentication (authenticate-first.ts): whether its calls are metered. */
  routeInfo?: { metered?: boolean };
};

/** Claims per key record: the record is cached (ApiKeysService.resolve), so they are built once per lookup, not per request. */
const claimsOf = new WeakMap<ApiKey, ApiKeyClaims>();

export function apiKeyPrincipal(key: ApiKey): Principal {
  let claims = claimsOf.get(key);
  if (!claims) {
    claims = keyClaims(key);
    claimsOf.set(key, claims);
  }
  return { id: key.id, kind: 'api-key', roles: ['api-key'], claims, share: claims.share };
}

function keyClaims(key: ApiKey): ApiKeyClaims {
  const limits = limitSetOf(key.limits);
  const project = key.project
    ? { id: key.project.id, name: key.project.name, limits: limitSetOf(key.project.limits) }
    : null;
  return {
    name: key.name,
    prefix: key.prefix,
    scopes: key.scopes,
    models: key.models,
    limits,
    project,
    hasBudget: hasBudget(limits) || (!!project && hasBudget(project.limits)),
    limited: limitsCall(limits) || (!!project && limitsCall(project.limits)),
    share: project ? `project:${project.id}` : key.id,
  };
}

/** Methods the viewer role may use on /admin/**. */
const READ_METHODS = ['GET', 'HEAD'];

/**
 * `/admin/**` takes the ADMIN_TOKEN bearer or a membership operator's access token (MembershipTokens:
 * admin, or viewer for reads only); every other protected route takes an API key, whose
 * per-minute request limits (the key's and its project's) are sliding windows in shared state counted
 * here, before the body is read, so all replicas share them and no minute boundary lets twice the limit
 * through (CallAdmission).
 */
@Injectable()
export class GatewayAuthenticator implements Authenticator {
  constructor(
    private readonly keys: ApiKeysService,
    private readonly config: GatewayConfig,
    private readonly admission: CallAdmission,
    private readonly membership: MembershipTokens,
    private readonly refusalHold: RefusalHold,
  ) {}

  async authenticate(req: KeyedRequest): Promise<Principal | null> {
    const token = bearerToken(req);
    const path: string = req.path ?? req.url ?? '';
    if (path === '/admin' || path.startsWith('/admin/')) return this.admin(token, req.method ?? 'GET');
    let key: ApiKey;
    try {
      if (!token) throw new GatewayError(GatewayErrorCode.ApiKeyMissing);
      key = await this.keys.resolve(token);
    } catch (e) {
      // A missing, unknown, revoked or expired key is answered after a hold (RefusalHold), once the refusal is
      // counted against its address (answerAfter): a caller trying keys or ignoring its 401s gets one answer
      // per connection per hold. /admin is not held (above).
      if (e instanceof GatewayError && e.getStatus() === 401)
        throw answerAfter(e, () => this.refusalHold.hold(Infinity, req.socket));
      throw e;
    }
    const principal = apiKeyPrincipal(key);
    // Recorded before counting: a refusal (429) carries the headers too.
    req.rateLimits ??= new RateLimits();
    try {
      await this.admission.countRequest(principal.claims as ApiKeyClaims, key.id, req.rateLimits, req.socket);
      // A metered route's call that any body would have refused (a used-up budget, every concurrent call in use).
      if (req.routeInfo?.metered) this.admission.refuseBeforeBody(principal.claims as ApiKeyClaims, key.id);
    } catch (e) {
      // Refused a known key, not a stranger: its connection may be kept (authenticate-first.ts).
      markKnownCaller(req);
      throw e;
    }
    return principal;
  }

  /** For WebSocket handshakes and other non-HTTP callers: the principal of a presented key. */
  async principalForKey(presented: string): Promise<Principal> {
    const key = await this.keys.resolve(presented);
    const principal = apiKeyPrincipal(key);
    await this.admission.countRequest(principal.claims as ApiKeyClaims, key.id);
    return principal;
  }

  private async admin(token: string | null, method: string): Promise<Principal> {
    const expected = this.config.ADMIN_TOKEN;
    if (!expected && !this.membership.enabled) throw new GatewayError(GatewayErrorCode.AdminDisabled);
    if (token && expected && sameSecret(token, expected))
      return { id: 'admin', kind: 'admin', roles: withImpliedRoles([ADMIN_ROLE]) };
    if (!token || !this.membership.enabled || !looksLikeJwt(token))
      throw new GatewayError(GatewayErrorCode.AdminTokenInvalid);
    const principal = await this.membership.principal(token);
    // The viewer role reads: refused here for every write, whatever a route's own @Roles say.
    if (!principal.roles.includes(ADMIN_ROLE) && !READ_METHODS.includes(method.toUpperCase()))
      throw new GatewayError(GatewayErrorCode.AdminReadOnly);
    return principal;
  }
}

function sameSecret(a: string, b: string): boolean {
  const ha = createHash('sha256').update(a).digest();
  const hb = createHash('sha256').update(b).digest();
  return timingSafeEqual(ha, hb);
}
