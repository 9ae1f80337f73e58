import { Injectable } from '@nestjs/common';
import { BusinessException, ErrorCode } from '@app/envelope';
import { FactorSettingsService } from '../factors/factor-settings.service';
import { firstFactorAmr, FactorStrength } from '../factors/factor-strength';
import { SecondFactorsService } from '../factors/second-factors.service';
import { Member } from '../members/member.entity';
import { MembersService } from '../members/members.service';
import { SessionClient } from '../sessions/client-facts';
import { SessionAuthentication, SessionsService } from '../sessions/sessions.service';
import { AccessTokenService } from './access-token.service';
import { MemberLoginResponse } from './dtos/member-login.dto';
import { LoginResult } from './dtos/mfa.dto';
import { MfaChallenges } from './mfa-challenges';

/** How a session began; carried in the access token as `loginType`. */
export type LoginType =
  'password' | 'phone' | 'register' | 'oauth2' | 'wechat' | 'wechat-mp' | 'passkey' | (string & {});

/**
 * Issues the login result for a member who has proven who they are (password, phone code, OAuth,
 * WeChat): a new session, its first refresh token and an access token. Every login path ends here.
 * A member with a second factor gets a challenge instead (completed at POST mfa/verify), and a member
 * whose role requires one (MFA_REQUIRED_ROLES) but has none an enrolment challenge; every other
 * member gets exactly the result they got before second factors existed.
 */
@Injectable()
export class LoginService {
  constructor(
    private readonly sessions: SessionsService,
    private readonly accessTokens: AccessTokenService,
    private readonly members: MembersService,
    private readonly factors: SecondFactorsService,
    private readonly factorSettings: FactorSettingsService,
    private readonly challenges: MfaChallenges,
  ) {}

  /**
   * `verifiedPasswordHash`: for a password login, the hash the password was checked against. The
   * session opens only while it is still current; a reset or change in between (which ends every
   * session after storing the new hash) refuses the login as bad credentials instead of leaving it open.
   */
  async issueLogin(
    member: Member,
    loginType: LoginType,
    client: SessionClient,
    verifiedPasswordHash?: string,
  ): Promise<LoginResult> {
    const firstAmr = firstFactorAmr(loginType);
    const factors = await this.factors.of(member.id);
    const enrol = factors.strength === FactorStrength.NONE && this.factorSettings.mfaRequiredByRole(member);
    if (factors.strength === FactorStrength.NONE && !enrol) {
      return this.completeLogin(member, loginType, client, verifiedPasswordHash, {
        amr: [firstAmr],
        factorStrength: FactorStrength.NONE,
      });
    }
    const { mfaToken, expiresIn } = await this.challenges.issue({
      memberId: member.id,
      loginType,
      firstAmr,
      passwordHash: verifiedPasswordHash,
      enrol,
    });
    return {
      mfaRequired: true,
      mfaToken,
      methods: enrol ? ['totp', 'passkey'] : factors.methods,
      enrolmentRequired: enrol,
      expiresIn,
    };
  }

  /** Opens the session of a member who passed every step of sign-in. */
  async completeLogin(
    member: Member,
    loginType: LoginType,
    client: SessionClient,
    verifiedPasswordHash: string | undefined,
    auth: SessionAuthentication,
  ): Promise<MemberLoginResponse> {
    const started = await this.sessions.start(member.id, loginType, client, verifiedPasswordHash, auth);
    if (!started) throw new BusinessException(ErrorCode.BAD_CREDENTIALS);
    const { session, refreshToken, refreshExpiresIn } = started;
    await this.members.touchLogin(member.id);
    return this.loginResponse(member, session.id, loginType, auth.amr, refreshToken, refreshExpiresIn);
  }

  loginResponse(
    member: Member,
    sessionId: string,
    loginType: string,
    amr: string[],
    refreshToken: string,
    refreshExpiresIn: number,
  ): MemberLoginResponse {
    const access = this.accessTokens.sign(member.id, sessionId, loginType, amr, member.roles);
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
