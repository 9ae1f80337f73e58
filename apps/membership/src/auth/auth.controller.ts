import { Body, Controller, Get, HttpCode, Inject, Optional, Post, Put } from '@nestjs/common';
import { ApiBody, ApiOperation, ApiResponse, ApiTags } from '@nestjs/swagger';
import { Throttle } from '@nestjs/throttler';
import { CurrentPrincipal, Principal, Public } from '@app/auth';
import { ApiEnvelope, BusinessException, ErrorCode, ErrorEnvelope } from '@app/envelope';
import { Member } from '../members/member.entity';
import { LINKED_IDENTITIES, LinkedIdentitiesSource } from '../members/linked-identities';
import { MembersService } from '../members/members.service';
import { ClientFacts } from '../sessions/client-facts';
import { Client } from '../sessions/client.decorator';
import { sessionIdOf } from '../sessions/session-id';
import { SessionsService } from '../sessions/sessions.service';
import { VerificationService } from '../verification/verification.service';
import {
  ChangePasswordRequest,
  LoginRequest,
  PhoneLoginRequest,
  RefreshTokenRequest,
  RegisterRequest,
  ResetPasswordRequest,
  SendCodeRequest,
  VerifyCodeRequest,
  VerifyCodeResponse,
} from './dtos/auth.dto';
import { MemberLoginResponse, TokenRefreshResponse } from './dtos/member-login.dto';
import { LoginResult, MFA_NOTE } from './dtos/mfa.dto';
import { RegisterResponse } from './dtos/register.dto';
import { ChangePasswordResponse, ProfileResponse, SendCodeResponse, UpdateProfileRequest } from './dtos/profile.dto';
import { PasswordLoginService } from './password-login.service';
import { PasswordService } from './password.service';
import { PhoneLoginService } from './phone-login.service';
import { TokenRefreshService } from './token-refresh.service';

const MINUTE = 60_000;
const err = (status: number, code: number, description: string) =>
  ApiResponse({ status, description: `code ${code}: ${description}`, type: ErrorEnvelope });

/** Member authentication: /api/v1/app/auth/*. */
@ApiTags('Member authentication')
@Controller('api/v1/app/auth')
@ApiResponse({ status: 429, description: 'code 429: rate limited (Retry-After header)', type: ErrorEnvelope })
export class AuthController {
  constructor(
    private readonly passwordLogin: PasswordLoginService,
    private readonly phoneLogin: PhoneLoginService,
    private readonly tokenRefresh: TokenRefreshService,
    private readonly passwords: PasswordService,
    private readonly verification: VerificationService,
    private readonly members: MembersService,
    private readonly sessions: SessionsService,
    @Optional() @Inject(LINKED_IDENTITIES) private readonly identities?: LinkedIdentitiesSource,
  ) {}

  @Public()
  @Post('register')
  @HttpCode(200)
  @Throttle({ default: { limit: 10, ttl: MINUTE } })
  @ApiOperation({
    summary: 'Register a member (no session: log in next)',
    description:
      'At least one of username, email, phone. An email or phone given with its code (emailCode / phoneCode, from send-code) is stored verified and ' +
      "taken back from another member's unproven claim; without a code it is an unproven claim: usable as the login account with this password, " +
      'never for code login, and it blocks nobody who proves the address.',
  })
  @ApiBody({
    type: RegisterRequest,
    examples: {
      website: {
        summary: 'The website form (email unproven)',
        value: { username: 'alice_01', email: 'alice@example.com', password: 'correct horse battery' },
      },
      provenPhone: {
        summary: 'Phone proven with a code',
        value: { username: 'alice_02', phone: '13800138000', phoneCode: '123456', password: 'correct horse battery' },
      },
    },
  })
  @ApiEnvelope(RegisterResponse)
  @err(400, 10000, 'validation failed (field names in message), e.g. password shorter than PASSWORD_MIN_LENGTH')
  @err(400, 10003, 'emailCode or phoneCode wrong, expired or used up')
  @err(409, 10005, 'username, email or phone already taken (an unproven claim does not block a proven address)')
  register(@Body() body: RegisterRequest, @Client() client: ClientFacts): Promise<RegisterResponse> {
    return this.passwordLogin.register(body, client);
  }

  @Public()
  @Post('login')
  @HttpCode(200)
  @Throttle({ default: { limit: 20, ttl: MINUTE } })
  @ApiOperation({ summary: 'Log in with account (username, email or phone) and password' })
  @ApiBody({
    type: LoginRequest,
    examples: { username: { value: { account: 'alice_01', password: 'correct horse battery' } } },
  })
  @ApiEnvelope(MemberLoginResponse, { description: MFA_NOTE })
  @err(401, 10002, 'wrong account or password (same answer for unknown accounts)')
  @err(423, 10008, 'locked after repeated failures, or disabled (Retry-After header)')
  login(@Body() body: LoginRequest, @Client() client: ClientFacts): Promise<LoginResult> {
    return this.passwordLogin.loginWithPassword(body, client);
  }

  @Public()
  @Post('login-by-phone')
  @HttpCode(200)
  @Throttle({ default: { limit: 20, ttl: MINUTE } })
  @ApiOperation({ summary: 'Log in with an SMS code; an unknown phone is registered on first login' })
  @ApiEnvelope(MemberLoginResponse, { description: MFA_NOTE })
  @err(400, 10003, 'code wrong, expired or used up')
  @err(423, 10008, 'too many wrong codes for this phone')
  loginByPhone(@Body() body: PhoneLoginRequest, @Client() client: ClientFacts): Promise<LoginResult> {
    return this.phoneLogin.loginByPhone(body, client);
  }

  @Public()
  @Post('send-code')
  @HttpCode(200)
  @Throttle({ default: { limit: 10, ttl: MINUTE } })
  @ApiOperation({
    summary: 'Send a 6-digit code by SMS or email',
    description: 'Valid 5 min; resend after 60 s; daily caps per target and per IP.',
  })
  @ApiEnvelope(SendCodeResponse)
  @err(429, 429, 'resend interval or daily cap (Retry-After header)')
  @err(423, 10008, 'target locked after a code was guessed out')
  @err(502, 10004, 'SMS or email could not be sent')
  sendCode(@Body() body: SendCodeRequest, @Client() client: ClientFacts): Promise<SendCodeResponse> {
    return this.verification.send(targetOf(body), client.ip, client.locale);
  }

  @Public()
  @Post('verify-code')
  @HttpCode(200)
  @Throttle({ default: { limit: 30, ttl: MINUTE } })
  @ApiOperation({ summary: 'Check a code without using it up (a wrong one counts against its 5 tries)' })
  @ApiEnvelope(VerifyCodeResponse)
  @err(400, 10003, 'code wrong, expired or used up')
  async verifyCode(@Body() body: VerifyCodeRequest): Promise<VerifyCodeResponse> {
    await this.verification.check(targetOf(body), body.code, false);
    return { valid: true };
  }

  @Public()
  @Post('refresh-token')
  @HttpCode(200)
  @Throttle({ default: { limit: 60, ttl: MINUTE } })
  @ApiOperation({ summary: 'Exchange a refresh token for new tokens (rotation; reuse revokes the session)' })
  @ApiEnvelope(MemberLoginResponse)
  @err(401, 401, 'refresh token invalid, expired, reused or revoked')
  refreshToken(@Body() body: RefreshTokenRequest): Promise<MemberLoginResponse> {
    return this.tokenRefresh.refresh(body.refreshToken);
  }

  @Post('refresh-token-by-jwt')
  @HttpCode(200)
  @Throttle({ default: { limit: 30, ttl: MINUTE } })
  @ApiOperation({ summary: 'Renew the current JWT in its last minutes (REFRESH_BY_JWT_WINDOW, default 5 min)' })
  @ApiEnvelope(TokenRefreshResponse)
  @err(400, 400, 'token not yet inside the refresh window')
  @err(401, 401, 'token missing, invalid, expired or revoked')
  refreshTokenByJwt(@CurrentPrincipal() principal: Principal): TokenRefreshResponse {
    return this.tokenRefresh.refreshByJwt(principal);
  }

  @Get('profile')
  @ApiOperation({ summary: "The current member's profile" })
  @ApiEnvelope(ProfileResponse)
  @err(401, 401, 'token missing, invalid, expired or revoked')
  async profile(@CurrentPrincipal() principal: Principal): Promise<ProfileResponse> {
    // The member row and the linked identities with one query where the identities feature offers it.
    if (this.identities?.memberWithIdentities) {
      const found = await this.identities.memberWithIdentities(principal.id);
      if (!found) throw new BusinessException(ErrorCode.UNAUTHORIZED);
      return this.profileOf(found.member, found.identities);
    }
    const [member, identities] = await Promise.all([this.requireMember(principal), this.identitiesOf(principal.id)]);
    return this.profileOf(member, identities);
  }

  @Put('profile')
  @ApiOperation({ summary: "Update the current member's profile (unknown fields are refused)" })
  @ApiEnvelope(ProfileResponse)
  @err(400, 10000, 'unknown field or bad value (field names in message)')
  async updateProfile(
    @CurrentPrincipal() principal: Principal,
    @Body() body: UpdateProfileRequest,
  ): Promise<ProfileResponse> {
    await this.requireMember(principal);
    return this.profileOf(await this.members.updateProfile(principal.id, body));
  }

  @Put('password')
  @Throttle({ default: { limit: 10, ttl: MINUTE } })
  @ApiOperation({
    summary: 'Change the password; ends every other session of the member',
    description:
      'A member without a password sets the first one with `code`: a fresh code (send-code) to their verified phone (type sms) or email.',
  })
  @ApiBody({
    type: ChangePasswordRequest,
    examples: {
      change: { value: { oldPassword: 'correct horse battery', newPassword: 'a new long password' } },
      firstPassword: {
        summary: 'First password (phone or third-party sign-up)',
        value: { newPassword: 'a new long password', type: 'sms', code: '123456' },
      },
    },
  })
  @ApiEnvelope(ChangePasswordResponse)
  @err(400, 10000, 'newPassword too short, or code missing for a first password')
  @err(400, 10003, 'code wrong, expired or used up')
  @err(409, 409, 'first password: no verified phone or email to send a code to')
  @err(401, 10002, 'old password wrong')
  @err(403, 10010, 'step-up needed (a member with a second factor): POST /api/v1/app/auth/step-up, then retry')
  changePassword(
    @CurrentPrincipal() principal: Principal,
    @Body() body: ChangePasswordRequest,
  ): Promise<ChangePasswordResponse> {
    return this.passwords.change(principal, body);
  }

  @Public()
  @Post('reset-password')
  @HttpCode(200)
  @Throttle({ default: { limit: 10, ttl: MINUTE } })
  @ApiOperation({ summary: 'Set a new password with an SMS or email code; ends every session of the member' })
  @ApiBody({
    type: ResetPasswordRequest,
    examples: {
      website: {
        summary: 'mortise website (type + account)',
        value: { type: 'email', account: 'alice@example.com', code: '123456', newPassword: 'a new long password' },
      },
      phone: {
        summary: 'type + phone',
        value: { type: 'sms', phone: '13800138000', code: '123456', newPassword: 'a new long password' },
      },
    },
  })
  @ApiEnvelope(ChangePasswordResponse)
  @err(400, 10003, 'code wrong, expired or used up')
  @err(404, 404, 'no member with this phone or email')
  resetPassword(@Body() body: ResetPasswordRequest, @Client() client: ClientFacts): Promise<ChangePasswordResponse> {
    return this.passwords.reset(body, client);
  }

  @Post('logout')
  @HttpCode(200)
  @ApiOperation({ summary: 'End the current session: its access and refresh tokens stop working at once' })
  @ApiEnvelope(null)
  async logout(@CurrentPrincipal() principal: Principal): Promise<null> {
    await this.sessions.revoke(principal.id, sessionIdOf(principal) ?? '', 'logout');
    return null;
  }

  private async requireMember(principal: Principal): Promise<Member> {
    const member = await this.members.findById(principal.id);
    if (!member) throw new BusinessException(ErrorCode.UNAUTHORIZED);
    return member;
  }

  private async identitiesOf(memberId: string) {
    return this.identities && /^\d{1,19}$/.test(memberId) ? await this.identities.listForMember(memberId) : [];
  }

  private async profileOf(
    m: Member,
    known?: Awaited<ReturnType<AuthController['identitiesOf']>>,
  ): Promise<ProfileResponse> {
    const identities = known ?? (await this.identitiesOf(m.id));
    return {
      id: m.id,
      username: m.username,
      email: m.email,
      phone: m.phone,
      nickname: m.nickname,
      avatarUrl: m.avatarUrl,
      gender: m.gender,
      birthDate: m.birthDate,
      status: m.status,
      memberLevel: m.memberLevel,
      points: m.points,
      roles: ['member', ...m.roles],
      createdTime: m.createdTime,
      lastLoginTime: m.lastLoginTime,
      identities: identities.map((i) => ({
        provider: i.provider,
        openId: i.openId ?? null,
        nickname: i.nickname ?? null,
        avatarUrl: i.avatarUrl ?? null,
      })),
    };
  }
}

function targetOf(body: SendCodeRequest) {
  return body.type === 'sms'
    ? { channel: 'sms' as const, target: body.phone! }
    : { channel: 'email' as const, target: body.email! };
}
