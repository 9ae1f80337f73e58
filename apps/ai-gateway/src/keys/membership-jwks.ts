import { Injectable, Logger } from '@nestjs/common';
import { createPublicKey, JsonWebKey, KeyObject } from 'crypto';
import { Clock } from '@app/platform';
import { GatewayConfig } from '../config/gateway.config';

/** Largest key-set document read (a handful of keys is under 2 KiB). */
const MAX_JWKS_BYTES = 64 * 1024;
/** Most keys taken from one document. */
const MAX_KEYS = 20;

/**
 * Membership's access-token keys (MEMBERSHIP_JWKS_URL), fetched by this replica and kept for
 * MEMBERSHIP_JWKS_CACHE_MS: no request fetches it except when a token names a kid this replica does not
 * know (a rotation), and then at most once per MEMBERSHIP_JWKS_REFRESH_MIN_MS whatever callers send, one
 * fetch at a time. A fetch is bounded in time and size and follows no redirect; when it fails the keys
 * already fetched stay in use. The URL is the operator's own setting, not a caller's.
 */
@Injectable()
export class MembershipJwks {
  private readonly logger = new Logger('MembershipJwks');
  private keys = new Map<string, KeyObject>();
  private fetchedAt = Number.NEGATIVE_INFINITY;
  private attemptedAt = Number.NEGATIVE_INFINITY;
  private inFlight?: Promise<void>;

  constructor(
    private readonly config: GatewayConfig,
    private readonly clock: Clock,
  ) {}

  get enabled(): boolean {
    return !!this.config.MEMBERSHIP_JWKS_URL;
  }

  /** The key of `kid`, or undefined when membership does not publish it; throws when no key set could ever be fetched. */
  async key(kid: string): Promise<KeyObject | undefined> {
    const now = this.clock.now();
    const stale = now - this.fetchedAt >= this.config.MEMBERSHIP_JWKS_CACHE_MS;
    if ((stale || !this.keys.has(kid)) && now - this.attemptedAt >= this.config.MEMBERSHIP_JWKS_REFRESH_MIN_MS)
      await this.refresh();
    else if (this.inFlight) await this.inFlight;
    if (this.fetchedAt === Number.NEGATIVE_INFINITY) throw new Error('membership key set unavailable');
    return this.keys.get(kid);
  }

  private refresh(): Promise<void> {
    this.inFlight ??= this.fetchKeys().finally(() => (this.inFlight = undefined));
    return this.inFlight;
  }

  private async fetchKeys(): Promise<void> {
    this.attemptedAt = this.clock.now();
    try {
      const res = await fetch(this.config.MEMBERSHIP_JWKS_URL!, {
        redirect: 'error',
        headers: { accept: 'application/json' },
        signal: AbortSignal.timeout(this.config.MEMBERSHIP_JWKS_TIMEOUT_MS),
      });
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      const body = await readBounded(res, MAX_JWKS_BYTES);
      this.keys = parseJwks(body);
      this.fetchedAt = this.clock.now();
    } catch (e) {
      this.logger.warn(
        `fetching ${this.config.MEMBERSHIP_JWKS_URL} failed (${(e as Error).message}); ${this.keys.size} key(s) kept`,
      );
    }
  }
}

async function readBounded(res: Response, max: number): Promise<string> {
  const declared = Number(res.headers.get('content-length') ?? 0);
  if (declared > max) throw new Error('key set too large');
  if (!res.body) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    size += chunk.byteLength;
    if (size > max) throw new Error('key set too large');
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** The ES256 (EC P-256) signing keys of a JWK Set by kid; other keys are ignored. */
export function parseJwks(text: string): Map<string, KeyObject> {
  const set = JSON.parse(text) as { keys?: unknown };
  if (!Array.isArray(set?.keys)) throw new Error('not a JWK Set');
  const keys = new Map<string, KeyObject>();
  for (const jwk of set.keys.slice(0, MAX_KEYS) as (JsonWebKey & { kid?: unknown; use?: unknown })[]) {
    if (
      jwk?.kty !== 'EC' ||
      jwk.crv !== 'P-256' ||
      typeof jwk.kid !== 'string' ||
      (jwk.alg !== undefined && jwk.alg !== 'ES256') ||
      (jwk.use !== undefined && jwk.use !== 'sig')
    )
      continue;
    try {
      keys.set(jwk.kid, createPublicKey({ key: { kty: 'EC', crv: 'P-256', x: jwk.x, y: jwk.y }, format: 'jwk' }));
    } catch {
      // A malformed key is skipped; the others still verify.
    }
  }
  return keys;
}
