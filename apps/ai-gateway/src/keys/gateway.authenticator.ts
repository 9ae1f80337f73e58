import { Inject, Injectable, Optional } from '@nestjs/common';
import { timingSafeEqual, createHash } from 'crypto';
import type { IncomingHttpHeaders } from 'http';
import { Authenticator, bearerToken, Principal } from '@app/auth';
import { GatewayError, GatewayErrorCode } from '@app/envelope';
import { BUCKETS_PER_WINDOW, RATE_CLOCK, SharedState, SlidingWindowLimiter } from '@app/platform';
import { GatewayConfig } from '../config/gateway.config';
import { ApiKey } from './api-key.entity';
import { ApiKeysService } from './api-keys.service';
import { ApiKeyClaims } from './key-scopes';

const RPM_WINDOW_MS = 60_000;

/** What the authenticator reads and writes on a request (req.res: its response; a WebSocket upgrade has none). */
type KeyedRequest = {
  headers: IncomingHttpHeaders;
  path?: string;
  url?: string;
  res?: { headersSent: boolean; setHeader(name: string, value: string): unknown };
};

/**
 * A duration as OpenAI writes `x-ratelimit-reset-*` (Go's duration format): `20ms`, `1s`, `6m0s`,
 * `1m0.5s`. Milliseconds are the finest unit.
 */
export function openAiDuration(ms: number): string {
  const total = Math.max(0, Math.ceil(ms));
  if (total < 1000) return `${total}ms`;
  const minutes = Math.floor(total / 60_000);
  const seconds = (total - minutes * 60_000) / 1000;
  const s = `${Number(seconds.toFixed(3))}s`;
  return minutes > 0 ? `${minutes}m${s}` : s;
}

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
  private readonly now: () => number;

  constructor(
    private readonly keys: ApiKeysService,
    private readonly config: GatewayConfig,
    state: SharedState,
    @Optional() @Inject(RATE_CLOCK) now?: () => number,
  ) {
    this.now = now ?? Date.now;
    this.rpm = new SlidingWindowLimiter(state, 'ai:rpm:', this.now);
  }

  async authenticate(req: KeyedRequest): Promise<Principal | null> {
    const token = bearerToken(req);
    const path: string = req.path ?? req.url ?? '';
    if (path === '/admin' || path.startsWith('/admin/')) return this.admin(token);
    if (!token) {
      throw new GatewayError(GatewayErrorCode.ApiKeyMissing);
    }
    const key = await this.keys.resolve(token);
    await this.enforceRate(key, req);
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
    if (!expected) throw new GatewayError(GatewayErrorCode.AdminDisabled);
    if (!token || !sameSecret(token, expected)) throw new GatewayError(GatewayErrorCode.AdminTokenInvalid);
    return { id: 'admin', kind: 'admin', roles: ['admin'] };
  }

  /**
   * Counts the call in the key's sliding window and, for an HTTP request, records OpenAI's
   * `x-ratelimit-*-requests` headers (also on the 429). `reset` is, as OpenAI defines it, the time until
   * the limit is back to its initial state: until the newest counted hit (this one) leaves the window,
   * i.e. the end of the current bucket plus the window (between 60 and 61 s for a minute window).
   */
  private async enforceRate(key: ApiKey, req?: KeyedRequest): Promise<void> {
    if (!key.requestsPerMinute) return;
    const limit = key.requestsPerMinute;
    const { allowed, count, retryAfterMs } = await this.rpm.hit(key.id, limit, RPM_WINDOW_MS);
    if (req) {
      const bucketMs = Math.ceil(RPM_WINDOW_MS / BUCKETS_PER_WINDOW);
      const now = Math.floor(this.now());
      const resetMs = (Math.floor(now / bucketMs) + 1) * bucketMs + RPM_WINDOW_MS - now;
      const headers = [
        'x-ratelimit-limit-requests', String(limit),
        'x-ratelimit-remaining-requests', String(allowed ? Math.max(0, limit - count) : 0),
        'x-ratelimit-reset-requests', openAiDuration(resetMs),
      ];
      // Every answer, errors and streams included, carries them.
      const res = req.res;
      if (res && typeof res.setHeader === 'function' && !res.headersSent) for (let i = 0; i < headers.length; i += 2) res.setHeader(headers[i], headers[i + 1]);
    }
    if (!allowed) {
      throw new GatewayError(GatewayErrorCode.RateLimited, { requestsPerMinute: key.requestsPerMinute, retryAfterSeconds: Math.max(1, Math.ceil(retryAfterMs / 1000)) });
    }
  }
}

function sameSecret(a: string, b: string): boolean {
  const ha = createHash('sha256').update(a).digest();
  const hb = createHash('sha256').update(b).digest();
  return timingSafeEqual(ha, hb);
}
