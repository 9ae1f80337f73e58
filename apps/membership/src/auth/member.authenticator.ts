import { Injectable } from '@nestjs/common';
import { Authenticator, bearerToken, Principal, withImpliedRoles } from '@app/auth';
import type { Request } from 'express';
import { BusinessException, ErrorCode, msg } from '@app/envelope';
import { SessionsService } from '../sessions/sessions.service';
import { AccessTokenService } from './access-token.service';

const TOUCH_INTERVAL_MS = 60_000;

/**
 * The membership app's AUTHENTICATOR: a valid access JWT whose session is still live and whose
 * member is enabled. Revocation (logout, password change, refresh-token reuse) takes effect at once on
 * the replica that revoked and within SESSION_CHECK_CACHE_MS (2 s) on the others, not at token expiry
 * (see SessionsService.liveness).
 */
@Injectable()
export class MemberAuthenticator implements Authenticator {
  constructor(
    private readonly tokens: AccessTokenService,
    private readonly sessions: SessionsService,
  ) {}

  // Sessions this replica marked active in the last minute: the UPDATE only changes rows idle for 60 s,
  // so running it on every request cost a database round trip for nothing (npm run bench).
  private readonly touchedAt = new Map<string, number>();

  private touch(sessionId: string): void {
    const now = Date.now();
    const last = this.touchedAt.get(sessionId);
    if (last !== undefined && now - last < TOUCH_INTERVAL_MS) return;
    if (this.touchedAt.size >= 50_000) this.touchedAt.clear();
    this.touchedAt.set(sessionId, now);
    void this.sessions.touch(sessionId).catch(() => undefined);
  }

  async authenticate(req: Request): Promise<Principal | null> {
    const raw = bearerToken(req);
    if (!raw) return null;
    const claims = this.tokens.verify(raw);
    if (!claims) throw new BusinessException(ErrorCode.UNAUTHORIZED, msg('auth.tokenInvalid'));
    const live = await this.sessions.liveness(claims.sid, claims.memberId);
    if (!live || live.revoked || live.expired)
      throw new BusinessException(ErrorCode.UNAUTHORIZED, msg('auth.sessionEnded'));
    if (live.memberStatus !== 'active')
      throw new BusinessException(ErrorCode.UNAUTHORIZED, msg('auth.accountDisabled'));
    this.touch(claims.sid);
    return { id: claims.memberId, kind: 'member', roles: withImpliedRoles(['member', ...live.roles]), claims };
  }
}
