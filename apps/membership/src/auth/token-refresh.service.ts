import { Injectable } from '@nestjs/common';
import { Principal } from '@app/auth';
import { BusinessException, ErrorCode, msg } from '@app/envelope';
import { Clock } from '@app/platform';
import { MembershipConfig } from '../config/membership.config';
import { MembersService } from '../members/members.service';
import { SessionsService } from '../sessions/sessions.service';
import { AccessTokenClaims, AccessTokenService } from './access-token.service';
import { MemberLoginResponse, TokenRefreshResponse } from './dtos/member-login.dto';
import { LoginService } from './login.service';

/** refresh-token (rotating refresh token) and refresh-token-by-jwt (renew a nearly expired JWT). */
@Injectable()
export class TokenRefreshService {
  constructor(
    private readonly sessions: SessionsService,
    private readonly members: MembersService,
    private readonly login: LoginService,
    private readonly accessTokens: AccessTokenService,
    private readonly config: MembershipConfig,
    private readonly clock: Clock,
  ) {}

  async refresh(refreshToken: string): Promise<MemberLoginResponse> {
    const { session, refreshToken: next, refreshExpiresIn } = await this.sessions.rotate(refreshToken);
    const member = await this.members.findById(session.memberId);
    if (!member || member.status !== 'active') {
      await this.sessions.revoke(session.memberId, session.id, 'member_disabled');
      throw new BusinessException(ErrorCode.UNAUTHORIZED, msg('auth.refreshInvalid'));
    }
    return this.login.loginResponse(member, session.id, session.loginType, session.amr, next, refreshExpiresIn);
  }

  /** Allowed only in the last REFRESH_BY_JWT_WINDOW ms of the presented token's life (the guard checked the rest). */
  refreshByJwt(principal: Principal): TokenRefreshResponse {
    const claims = principal.claims as AccessTokenClaims;
    const remainingMs = claims.exp * 1000 - this.clock.now();
    if (remainingMs > this.config.REFRESH_BY_JWT_WINDOW) {
      throw new BusinessException(
        ErrorCode.BAD_REQUEST,
        msg('auth.refreshTooEarly', { seconds: Math.round(this.config.REFRESH_BY_JWT_WINDOW / 1000) }),
      );
    }
    const access = this.accessTokens.sign(
      claims.memberId,
      claims.sid,
      claims.loginType,
      claims.amr ?? [],
      principal.roles.filter((r) => r !== 'member'),
    );
    return { token: access.token, tokenType: 'Bearer', expiresIn: access.expiresIn };
  }
}
