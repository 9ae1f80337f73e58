import { Injectable } from '@nestjs/common';
import { JwtService } from '@nestjs/jwt';
import { createSecretKey, KeyObject, randomUUID } from 'crypto';
import { OPERATOR_ROLES } from '@app/auth';
import { Clock } from '@app/platform';
import { MembershipConfig } from '../config/membership.config';
import { TokenSecrets } from '../security/token-secrets';
import { ACCESS_TOKEN_ALG, AccessTokenKeys } from './access-token-keys';

export const ACCESS_TOKEN_AUDIENCE = 'membership:member';

/** Claims of a member access token (docs/contract/DECISIONS.md "Tokens and sessions"). */
export interface AccessTokenClaims {
  sub: string;
  memberId: string;
  type: 'member';
  loginType: string;
  /** How the session was authenticated (RFC 8176: pwd, sms, oauth, otp, hwk, swk, mfa); absent in tokens issued before second factors. */
  amr?: string[];
  /** The member's roles when the token was signed (the AI gateway reads admin/viewer from it; this app reads them live). */
  roles?: string[];
  sid: string;
  jti: string;
  iss: string;
  aud: string | string[];
  iat: number;
  exp: number;
}

export interface SignedAccessToken {
  token: string;
  /** The token's real lifetime in ms (exp - iat). */
  expiresIn: number;
}

/** How many verified tokens a replica remembers (the map is emptied when full). */
const MAX_VERIFIED = 10_000;
/** Longest token header read before its signature is checked. */
const MAX_HEADER_CHARS = 512;

/**
 * ES256 access JWTs with a `kid` (AccessTokenKeys), published at /.well-known/jwks.json so another
 * service (the AI gateway) can verify them. Tokens signed with HS256 before the switch are accepted
 * until ACCESS_TOKEN_HS256_ACCEPT_UNTIL (default: issued before this process started and at most
 * ACCESS_TOKEN_TTL after it), so nobody is signed out by the upgrade. The algorithm, key, issuer,
 * audience and `type` are pinned on verify.
 */
@Injectable()
export class AccessTokenService {
  private readonly jwt = new JwtService({});
  private readonly ttlSeconds: number;
  private readonly legacyKey: KeyObject;
  private readonly bootSeconds: number;
  private readonly legacyUntilMs: number;
  // Tokens whose signature and claims this replica already checked, by the exact token string: the
  // signature check (ECDSA, base64url and JSON decoding) is a real share of a profile read's CPU
  // (docs/operations/performance.md). Only the expiry depends on time; it is checked again on every use.
  private readonly verified = new Map<string, AccessTokenClaims>();

  constructor(
    secrets: TokenSecrets,
    private readonly keys: AccessTokenKeys,
    private readonly config: MembershipConfig,
    private readonly clock: Clock,
  ) {
    // A KeyObject, not the string: given a string, jsonwebtoken first tries (and fails) to parse it as
    // a PEM public/private key on every verify.
    this.legacyKey = createSecretKey(Buffer.from(secrets.accessToken, 'utf8'));
    this.ttlSeconds = Math.max(1, Math.floor(config.ACCESS_TOKEN_TTL / 1000));
    this.bootSeconds = this.nowSeconds();
    this.legacyUntilMs = config.ACCESS_TOKEN_HS256_ACCEPT_UNTIL
      ? Date.parse(config.ACCESS_TOKEN_HS256_ACCEPT_UNTIL)
      : clock.now() + config.ACCESS_TOKEN_TTL;
  }

  sign(memberId: string, sessionId: string, loginType: string, amr: string[], roles: string[]): SignedAccessToken {
    const key = this.keys.signing;
    // Operators' tokens also name the AI gateway's admin API as an audience (OPERATOR_TOKEN_AUDIENCE):
    // a member's token is never one the gateway takes.
    const operator = roles.some((r) => OPERATOR_ROLES.includes(r));
    const audience = operator ? [ACCESS_TOKEN_AUDIENCE, this.config.OPERATOR_TOKEN_AUDIENCE] : ACCESS_TOKEN_AUDIENCE;
    // iat from the Clock: jsonwebtoken counts expiresIn from it (else from Date.now).
    const token = this.jwt.sign(
      { memberId, type: 'member', loginType, amr, roles, sid: sessionId, iat: this.nowSeconds() },
      {
        privateKey: key.privateKey as unknown as string,
        algorithm: ACCESS_TOKEN_ALG,
        keyid: key.kid,
        subject: memberId,
        jwtid: randomUUID(),
        issuer: this.config.ACCESS_TOKEN_ISSUER,
        audience,
        expiresIn: this.ttlSeconds,
      },
    );
    return { token, expiresIn: this.ttlSeconds * 1000 };
  }

  /** The claims of a valid member access token, or null (bad signature, alg, kid, type, expiry...). */
  verify(token: string): AccessTokenClaims | null {
    const known = this.verified.get(token);
    if (known) {
      // jsonwebtoken's own rule: expired once exp <= now in whole seconds.
      if (known.exp > this.nowSeconds()) return known;
      this.verified.delete(token);
      return null;
    }
    const checked = this.check(token);
    const claims = checked?.claims ?? null;
    // Not remembered: a token with a not-before time (this service never sets one), which jsonwebtoken
    // would have to check again, and an HS256 one (its window closes before it expires).
    if (claims && !checked!.legacy && (claims as { nbf?: unknown }).nbf === undefined) {
      if (this.verified.size >= MAX_VERIFIED) this.verified.clear();
      this.verified.set(token, Object.freeze(claims));
    }
    return claims;
  }

  private nowSeconds(): number {
    return Math.floor(this.clock.now() / 1000);
  }

  private legacyOpen(): boolean {
    return this.clock.now() < this.legacyUntilMs;
  }

  /** The verification key named by the token's header, or null (unknown kid; HS256 outside its window). */
  private keyFor(token: string): { key: KeyObject; alg: 'ES256' | 'HS256' } | null {
    const dot = token.indexOf('.');
    if (dot <= 0 || dot > MAX_HEADER_CHARS) return null;
    let header: { alg?: unknown; kid?: unknown };
    try {
      header = JSON.parse(Buffer.from(token.slice(0, dot), 'base64url').toString('utf8')) as {
        alg?: unknown;
        kid?: unknown;
      };
    } catch {
      return null;
    }
    if (header?.alg === ACCESS_TOKEN_ALG) {
      const key = this.keys.find(header.kid);
      return key ? { key: key.publicKey, alg: ACCESS_TOKEN_ALG } : null;
    }
    if (header?.alg === 'HS256' && this.legacyOpen()) return { key: this.legacyKey, alg: 'HS256' };
    return null;
  }

  private check(token: string): { claims: AccessTokenClaims; legacy: boolean } | null {
    const found = this.keyFor(token);
    if (!found) return null;
    let claims: AccessTokenClaims;
    try {
      claims = this.jwt.verify<AccessTokenClaims>(token, {
        secret: found.key as unknown as string,
        algorithms: [found.alg],
        issuer: this.config.ACCESS_TOKEN_ISSUER,
        audience: ACCESS_TOKEN_AUDIENCE,
        clockTimestamp: this.nowSeconds(),
      });
    } catch {
      return null;
    }
    // HS256 tokens are the ones signed before the switch (this process signs ES256 only).
    if (found.alg === 'HS256' && !(typeof claims.iat === 'number' && claims.iat <= this.bootSeconds)) return null;
    const ok =
      claims.type === 'member' &&
      typeof claims.sub === 'string' &&
      claims.sub === claims.memberId &&
      typeof claims.sid === 'string' &&
      typeof claims.iat === 'number' &&
      typeof claims.exp === 'number';
    return ok ? { claims, legacy: found.alg === 'HS256' } : null;
  }
}
