import { Injectable } from '@nestjs/common';
import type { Request } from 'express';
import { BusinessException, ErrorCode } from '@app/envelope';
import { Member } from '../members/member.entity';
import { MembersService } from '../members/members.service';
import { SessionsService } from '../sessions/sessions.service';
import { AccessTokenService } from './access-token.service';
import { MemberLoginResponse } from './dtos/member-login.response';

/** How a session began; carried in the access token as `loginType`. */
export type LoginType = 'password' | 'phone' | 'register' | 'oauth2' | 'wechat' | 'wechat-mp' | (string & {});

/**
 * Issues the login result for a member who has proven who they are (password, phone code, OAuth,
 * WeChat): a new session, its first refresh token and an access token. Every login path ends here.
 */
@Injectable()
export class LoginService {
  constructor(
    private readonly sessions: SessionsService,
    private readonly accessTokens: AccessTokenService,
    private readonly members: MembersService,
  ) {}

  /**
   * `verifiedPasswordHash`: for a password login, the hash the password was checked against. The
   * session opens only while it is still current; a reset or change in between (which ends every
   * session after storing the new hash) refuses the login as bad credentials instead of leaving it open.
   */
  async issueLogin(member: Member, loginType: LoginType, req: Request, verifiedPasswordHash?: string): Promise<MemberLoginResponse> {
    const started = await this.sessions.start(member.id, loginType, req, verifiedPasswordHash);
    if (!started) throw new BusinessException(ErrorCode.BAD_CREDENTIALS);
    const { session, refreshToken, refreshExpiresIn } = started;
    await this.members.touchLogin(member.id);
    return this.loginResponse(member, session.id, loginType, refreshToken, refreshExpiresIn);
  }

  loginResponse(member: Member, sessionId: string, loginType: string, refreshToken: string, refreshExpiresIn: number): MemberLoginResponse {
    const access = this.accessTokens.sign(member.id, sessionId, loginType);
    return {
      memberId: member.id,
      username: member.username,
      nickname: member.nickname,
      avatarUrl: member.avatarUrl,
      token: access.token,
      refreshToken,
      tokenType: 'Bearer',
      expiresIn: access.expiresIn,
      refreshExpiresIn,
    };
  }
}
