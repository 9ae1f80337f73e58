import { Inject, Injectable, Optional } from '@nestjs/common';
import { timingSafeEqual, createHash } from 'crypto';
import { Authenticator, bearerToken, Principal } from '@app/auth';
import { OpenAiError } from '@app/envelope';
import { RATE_CLOCK, SharedState, SlidingWindowLimiter } from '@app/platform';
import { GatewayConfig } from '../config/gateway.config';
import { ApiKey } from './api-key.entity';
import { ApiKeysService } from './api-keys.service';
import { ApiKeyClaims } from './key-scopes';

export function apiKeyPrincipal(key: ApiKey): Principal {
  const claims: ApiKeyClaims = {
    name: key.name,
    prefix: key.prefix,
    scopes: key.scopes,
    models: key.models,
    requestsPerMinute: key.requestsPerMinute,
    hasBudget: key.budgetYuan !== null,
  };
  return { id: key.id, kind: 'api-key', roles: ['api-key'], claims };
}

/**
 * `/admin/**` takes the ADMIN_TOKEN bearer; every other protected route takes an API key, whose
 * per-minute request limit is a sliding window in shared state so all replicas share it and no
 * minute boundary lets twice the limit through.
 */
@Injectable()
export class GatewayAuthenticator implements Authenticator {
  /** Requests per minute per key: a sliding window in shared state, one round trip per call. */
  private readonly rpm: SlidingWindowLimiter;

  constructor(
    private readonly keys: ApiKeysService,
    private readonly config: GatewayConfig,
    state: SharedState,
    @Optional() @Inject(RATE_CLOCK) now?: () => number,
  ) {
    this.rpm = new SlidingWindowLimiter(state, 'ai:rpm:', now ?? Date.now);
  }

  async authenticate(req: any): Promise<Principal | null> {
    const token = bearerToken(req);
    const path: string = req.path ?? req.url ?? '';
    if (path === '/admin' || path.startsWith('/admin/')) return this.admin(token);
    if (!token) {
      throw new OpenAiError(401, "You didn't provide an API key. Send it as 'Authorization: Bearer <API_KEY>'.", { type: 'invalid_request_error', code: 'invalid_api_key' });
    }
    const key = await this.keys.resolve(token);
    await this.enforceRate(key);
    return apiKeyPrincipal(key);
  }

  /** For WebSocket handshakes and other non-HTTP callers: the principal of a presented key. */
  async principalForKey(presented: string): Promise<Principal> {
    const key = await this.keys.resolve(presented);
    await this.enforceRate(key);
    return apiKeyPrincipal(key);
  }

  private admin(token: string | null): Principal {
    const expected = this.config.ADMIN_TOKEN;
    if (!expected) throw new OpenAiError(403, 'The admin API is disabled: ADMIN_TOKEN is not set', { type: 'permission_error', code: 'admin_disabled' });
    if (!token || !sameSecret(token, expected)) throw new OpenAiError(401, 'Invalid admin token', { type: 'invalid_request_error', code: 'invalid_admin_token' });
    return { id: 'admin', kind: 'admin', roles: ['admin'] };
  }

  private async enforceRate(key: ApiKey): Promise<void> {
    if (!key.requestsPerMinute) return;
    const { allowed, retryAfterMs } = await this.rpm.hit(key.id, key.requestsPerMinute, 60_000);
    if (!allowed) {
      throw new OpenAiError(429, `Rate limit reached for this API key: ${key.requestsPerMinute} requests per minute`, {
        type: 'requests',
        code: 'rate_limit_exceeded',
        retryAfterSeconds: Math.max(1, Math.ceil(retryAfterMs / 1000)),
      });
    }
  }
}

function sameSecret(a: string, b: string): boolean {
  const ha = createHash('sha256').update(a).digest();
  const hb = createHash('sha256').update(b).digest();
  return timingSafeEqual(ha, hb);
}
