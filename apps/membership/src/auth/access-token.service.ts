import { Injectable } from '@nestjs/common';
import { JwtService } from '@nestjs/jwt';
import { createSecretKey, randomUUID } from 'crypto';
import { Clock } from '@app/platform';
import { MembershipConfig } from '../config/membership.config';
import { TokenSecrets } from '../security/token-secrets';

export const ACCESS_TOKEN_ISSUER = 'membership';
export const ACCESS_TOKEN_AUDIENCE = 'membership:member';

/** Claims of a member access token (DECISIONS.md "Tokens and sessions"). */
export interface AccessTokenClaims {
  sub: string;
  memberId: string;
  type: 'member';
  loginType: string;
  /** How the session was authenticated (RFC 8176: pwd, sms, oauth, otp, hwk, swk, mfa); absent in tokens issued before second factors. */
  amr?: string[];
  sid: string;
  jti: string;
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

/** HS256 access JWTs; the algorithm, issuer, audience and `type` are pinned on verify. */
@Injectable()
export class AccessTokenService {
  private readonly jwt: JwtService;
  private readonly ttlSeconds: number;
  // Tokens whose signature and claims this replica already checked, by the exact token string: the
  // signature check (HMAC, base64url and JSON decoding) is a real share of a profile read's CPU (README,
  // Performance). Only the expiry depends on time; it is checked again on every use.
  private readonly verified = new Map<string, AccessTokenClaims>();

  constructor(
    secrets: TokenSecrets,
    config: MembershipConfig,
    private readonly clock: Clock,
  ) {
    // A KeyObject, not the string: given a string, jsonwebtoken first tries (and fails) to parse it as
    // a PEM public/private key on every verify and sign.
    this.jwt = new JwtService({ secret: createSecretKey(Buffer.from(secrets.accessToken, 'utf8')) as unknown as string });
    this.ttlSeconds = Math.max(1, Math.floor(config.ACCESS_TOKEN_TTL / 1000));
  }

  sign(memberId: string, sessionId: string, loginType: string, amr: string[]): SignedAccessToken {
    // iat from the Clock: jsonwebtoken counts expiresIn from it (else from Date.now).
    const token = this.jwt.sign(
      { memberId, type: 'member', loginType, amr, sid: sessionId, iat: this.nowSeconds() },
      {
        algorithm: 'HS256',
        subject: memberId,
        jwtid: randomUUID(),
        issuer: ACCESS_TOKEN_ISSUER,
        audience: ACCESS_TOKEN_AUDIENCE,
        expiresIn: this.ttlSeconds,
        header: { alg: 'HS256', typ: 'JWT' },
      },
    );
    return { token, expiresIn: this.ttlSeconds * 1000 };
  }

  /** The claims of a valid member access token, or null (bad signature, alg, type, expiry...). */
  verify(token: string): AccessTokenClaims | null {
    const known = this.verified.get(token);
    if (known) {
      // jsonwebtoken's own rule: expired once exp <= now in whole seconds.
      if (known.exp > this.nowSeconds()) return known;
      this.verified.delete(token);
      return null;
    }
    const claims = this.check(token);
    // Not remembered: a token with a not-before time (this service never sets one), which jsonwebtoken
    // would have to check again.
    if (claims && (claims as { nbf?: unknown }).nbf === undefined) {
      if (this.verified.size >= MAX_VERIFIED) this.verified.clear();
      this.verified.set(token, Object.freeze(claims));
    }
    return claims;
  }

  private nowSeconds(): number {
    return Math.floor(this.clock.now() / 1000);
  }

  private check(token: string): AccessTokenClaims | null {
    let claims: AccessTokenClaims;
    try {
      claims = this.jwt.verify<AccessTokenClaims>(token, {
        algorithms: ['HS256'],
        issuer: ACCESS_TOKEN_ISSUER,
        audience: ACCESS_TOKEN_AUDIENCE,
        clockTimestamp: this.nowSeconds(),
      });
    } catch {
      return null;
    }
    const ok =
      claims.type === 'member' &&
      typeof claims.sub === 'string' &&
      claims.sub === claims.memberId &&
      typeof claims.sid === 'string' &&
      typeof claims.exp === 'number';
    return ok ? claims : null;
  }
}
