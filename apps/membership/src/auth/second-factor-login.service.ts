import { Injectable } from '@nestjs/common';
import type {
  AuthenticationResponseJSON,
  PublicKeyCredentialCreationOptionsJSON,
  PublicKeyCredentialRequestOptionsJSON,
  RegistrationResponseJSON,
} from '@simplewebauthn/server';
import { Principal } from '@app/auth';
import { BusinessException, ErrorCode, msg } from '@app/envelope';
import { MembershipConfig } from '../config/membership.config';
import { FactorSettingsService } from '../factors/factor-settings.service';
import { combineAmr, FactorStrength } from '../factors/factor-strength';
import { TotpEnrolmentView } from '../factors/dtos/factor-views.dto';
import { PasskeysService } from '../factors/passkeys.service';
import { memberActing } from '../factors/requester';
import { FactorAnswer, SecondFactorsService } from '../factors/second-factors.service';
import { StepUpService } from '../factors/step-up.service';
import { Member } from '../members/member.entity';
import { MembersService } from '../members/members.service';
import { ClientFacts } from '../sessions/client-facts';
import { sessionIdOf } from '../sessions/session-id';
import { AccessTokenClaims, AccessTokenService } from './access-token.service';
import { MemberLoginResponse } from './dtos/member-login.dto';
import { MfaEnrolmentLoginResponse, StepUpResponse } from './dtos/mfa.dto';
import { LoginService } from './login.service';
import { MfaChallenges, OpenChallenge } from './mfa-challenges';

/**
 * The second step of sign-in (answer the challenge, or enrol a factor when the member's role requires
 * one), passwordless sign-in with a passkey, and step-up of a signed-in session.
 */
@Injectable()
export class SecondFactorLoginService {
  constructor(
    private readonly challenges: MfaChallenges,
    private readonly factors: SecondFactorsService,
    private readonly settings: FactorSettingsService,
    private readonly passkeys: PasskeysService,
    private readonly stepUps: StepUpService,
    private readonly members: MembersService,
    private readonly login: LoginService,
    private readonly accessTokens: AccessTokenService,
    private readonly config: MembershipConfig,
  ) {}

  async verify(mfaToken: string, answer: FactorAnswer, client: ClientFacts): Promise<MemberLoginResponse> {
    const challenge = await this.challenges.open(mfaToken, false);
    const member = await this.activeMember(challenge.pending.memberId);
    let shown;
    try {
      shown = await this.factors.check(
        member,
        answer,
        { kind: 'second-factor', memberId: member.id, bind: challenge.id },
        client.locale,
      );
    } catch (err) {
      if (err instanceof BusinessException && err.code === ErrorCode.SECOND_FACTOR_INVALID)
        await this.challenges.countFailure(challenge.id);
      throw err;
    }
    await this.challenges.take(challenge.id);
    const { pending } = challenge;
    return this.login.completeLogin(member, pending.loginType, client, pending.passwordHash, {
      amr: combineAmr(pending.firstAmr, shown.amr),
      factorStrength: shown.strength,
    });
  }

  async challengePasskeyOptions(mfaToken: string): Promise<PublicKeyCredentialRequestOptionsJSON> {
    const challenge = await this.challenges.open(mfaToken, false);
    return this.passkeys.authenticationOptions({
      kind: 'second-factor',
      memberId: challenge.pending.memberId,
      bind: challenge.id,
    });
  }

  async enrolTotp(mfaToken: string): Promise<TotpEnrolmentView> {
    const challenge = await this.challenges.open(mfaToken, true);
    return this.settings.beginTotp(await this.activeMember(challenge.pending.memberId));
  }

  async confirmEnrolTotp(mfaToken: string, code: string, client: ClientFacts): Promise<MfaEnrolmentLoginResponse> {
    const challenge = await this.challenges.open(mfaToken, true);
    const member = await this.activeMember(challenge.pending.memberId);
    let codes;
    try {
      codes = await this.settings.confirmTotp(
        { member, locale: client.locale, audit: memberActing(member.id, client) },
        code,
      );
    } catch (err) {
      if (err instanceof BusinessException && err.code === ErrorCode.SECOND_FACTOR_INVALID)
        await this.challenges.countFailure(challenge.id);
      throw err;
    }
    return this.finishEnrolment(challenge, member, 'otp', FactorStrength.TOTP, codes, client);
  }

  async enrolPasskeyOptions(mfaToken: string): Promise<PublicKeyCredentialCreationOptionsJSON> {
    const challenge = await this.challenges.open(mfaToken, true);
    return this.settings.passkeyOptions(await this.activeMember(challenge.pending.memberId));
  }

  async enrolPasskey(
    mfaToken: string,
    credential: RegistrationResponseJSON,
    name: string | undefined,
    client: ClientFacts,
  ): Promise<MfaEnrolmentLoginResponse> {
    const challenge = await this.challenges.open(mfaToken, true);
    const member = await this.activeMember(challenge.pending.memberId);
    const added = await this.settings.addPasskey(
      { member, locale: client.locale, audit: memberActing(member.id, client) },
      credential,
      name,
    );
    return this.finishEnrolment(
      challenge,
      member,
      added.passkey.backedUp ? 'swk' : 'hwk',
      FactorStrength.PASSKEY,
      added.recoveryCodes,
      client,
    );
  }

  passwordlessOptions(): Promise<PublicKeyCredentialRequestOptionsJSON> {
    return this.passkeys.authenticationOptions({ kind: 'passwordless' });
  }

  /** A user-verified passkey is two factors in one (the device, and its PIN or biometrics): no further challenge. */
  async passwordless(credential: AuthenticationResponseJSON, client: ClientFacts): Promise<MemberLoginResponse> {
    const verified = await this.passkeys.verifyAssertion(credential, { kind: 'passwordless' });
    if (!verified) throw new BusinessException(ErrorCode.SECOND_FACTOR_INVALID, msg('factors.passkeyInvalid'));
    const member = await this.activeMember(verified.passkey.memberId);
    return this.login.completeLogin(member, 'passkey', client, undefined, {
      amr: [verified.backedUp ? 'swk' : 'hwk', 'mfa'],
      factorStrength: FactorStrength.PASSKEY,
    });
  }

  stepUpPasskeyOptions(principal: Principal): Promise<PublicKeyCredentialRequestOptionsJSON> {
    return this.passkeys.authenticationOptions({
      kind: 'step-up',
      memberId: principal.id,
      bind: sessionIdOf(principal),
    });
  }

  async stepUp(principal: Principal, answer: FactorAnswer, client: ClientFacts): Promise<StepUpResponse> {
    const member = await this.activeMember(principal.id);
    const sid = sessionIdOf(principal) ?? '';
    const factors = await this.factors.of(member.id);
    if (factors.strength === FactorStrength.NONE)
      throw new BusinessException(ErrorCode.CONFLICT, msg('factors.noFactor'));
    const shown = await this.factors.check(
      member,
      answer,
      { kind: 'step-up', memberId: member.id, bind: sid },
      client.locale,
    );
    // A weaker factor than the member's strongest does not step up (StepUpService.assert would still refuse).
    if (shown.strength < factors.strength) await this.stepUps.assert(member.id, undefined);
    const amr = await this.stepUps.record(member.id, sid, shown);
    if (!amr) throw new BusinessException(ErrorCode.UNAUTHORIZED, msg('auth.sessionEnded'));
    const claims = principal.claims as AccessTokenClaims;
    const access = this.accessTokens.sign(member.id, sid, claims.loginType, amr, member.roles);
    return {
      token: access.token,
      tokenType: 'Bearer',
      expiresIn: access.expiresIn,
      amr,
      stepUpExpiresIn: this.config.STEP_UP_MAX_AGE_MS,
    };
  }

  private async finishEnrolment(
    challenge: OpenChallenge,
    member: Member,
    amr: string,
    strength: FactorStrength,
    codes: string[] | null,
    client: ClientFacts,
  ): Promise<MfaEnrolmentLoginResponse> {
    await this.challenges.take(challenge.id);
    const { pending } = challenge;
    const login = await this.login.completeLogin(member, pending.loginType, client, pending.passwordHash, {
      amr: combineAmr(pending.firstAmr, amr),
      factorStrength: strength,
    });
    return { ...login, recoveryCodes: codes ?? [] };
  }

  private async activeMember(id: string): Promise<Member> {
    const member = await this.members.findById(id);
    if (!member) throw new BusinessException(ErrorCode.MFA_CHALLENGE_INVALID, msg('factors.challengeInvalid'));
    if (member.status !== 'active') throw new BusinessException(ErrorCode.ACCOUNT_LOCKED, msg('auth.accountDisabled'));
    return member;
  }
}
