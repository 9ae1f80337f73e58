import { Injectable } from '@nestjs/common';
import { JwtService } from '@nestjs/jwt';
import { OPERATOR_ROLES, Principal, withImpliedRoles } from '@app/auth';
import { GatewayError, GatewayErrorCode } from '../errors';
import { Clock } from '@app/platform';
import { GatewayConfig } from '../config/gateway.config';
import { MembershipJwks } from './membership-jwks';

/** Longest membership token read (they are under 1 KiB). */
const MAX_TOKEN_CHARS = 8192;
/** RFC 8176 values that prove a second factor (membership's factors/factor-strength.ts: otp, hwk/swk; `mfa` when two were shown). */
const SECOND_FACTOR_AMR = ['mfa', 'otp', 'hwk', 'swk'];

/** What the gateway reads from a membership access token (membership's auth/access-token.service.ts). */
export interface MembershipTokenClaims {
  sub: string;
  sid: string;
  type: 'member';
  amr?: string[];
  roles?: string[];
  iss: string;
  aud: string | string[];
  iat: number;
  exp: number;
}

/** True for a bearer token shaped like a JWT (three base64url parts), as opposed to ADMIN_TOKEN. */
export function looksLikeJwt(token: string): boolean {
  return /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/.test(token);
}

/**
 * An operator signed in through membership: an ES256 access token verified against membership's
 * JWKS, with the configured issuer and audience, unexpired by this app's Clock, carrying the admin or
 * viewer role and a second factor in `amr`. The token's roles are those of its signing: a role removed
 * or an account disabled in membership ends here when the token expires (ACCESS_TOKEN_TTL there).
 */
@Injectable()
export class MembershipTokens {
  private readonly jwt = new JwtService({});

  constructor(
    private readonly jwks: MembershipJwks,
    private readonly config: GatewayConfig,
    private readonly clock: Clock,
  ) {}

  get enabled(): boolean {
    return this.jwks.enabled;
  }

  async principal(token: string): Promise<Principal> {
    const invalid = () => new GatewayError(GatewayErrorCode.AdminTokenInvalid);
    if (token.length > MAX_TOKEN_CHARS) throw invalid();
    const header = headerOf(token);
    if (header?.alg !== 'ES256' || typeof header.kid !== 'string') throw invalid();
    let key;
    try {
      key = await this.jwks.key(header.kid);
    } catch {
      throw new GatewayError(GatewayErrorCode.MembershipKeysUnavailable);
    }
    if (!key) throw invalid();
    let claims: MembershipTokenClaims;
    try {
      claims = this.jwt.verify<MembershipTokenClaims>(token, {
        secret: key as unknown as string,
        algorithms: ['ES256'],
        issuer: this.config.MEMBERSHIP_TOKEN_ISSUER,
        audience: this.config.MEMBERSHIP_TOKEN_AUDIENCE,
        clockTimestamp: Math.floor(this.clock.now() / 1000),
      });
    } catch {
      throw invalid();
    }
    if (claims.type !== 'member' || typeof claims.sub !== 'string' || typeof claims.exp !== 'number') throw invalid();
    const roles = Array.isArray(claims.roles) ? claims.roles.filter((r) => OPERATOR_ROLES.includes(r)) : [];
    if (!roles.length) throw new GatewayError(GatewayErrorCode.AdminRoleRequired);
    const amr = Array.isArray(claims.amr) ? claims.amr : [];
    if (!amr.some((m) => SECOND_FACTOR_AMR.includes(m)))
      throw new GatewayError(GatewayErrorCode.AdminSecondFactorRequired);
    // kind 'member': audit entries name the member (libs/audit), and the per-member request limit applies.
    return {
      id: claims.sub,
      kind: 'member',
      roles: withImpliedRoles(roles),
      claims: { memberId: claims.sub, sid: claims.sid, amr },
    };
  }
}

function headerOf(token: string): { alg?: unknown; kid?: unknown } | null {
  try {
    return JSON.parse(Buffer.from(token.slice(0, token.indexOf('.')), 'base64url').toString('utf8')) as {
      alg?: unknown;
      kid?: unknown;
    };
  } catch {
    return null;
  }
}
