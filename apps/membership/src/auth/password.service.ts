import { Inject, Injectable, Optional } from '@nestjs/common';
import { Principal } from '@app/auth';
import { addressLimitKey } from '@app/platform';
import { BusinessException, ErrorCode, fieldError, msg } from '@app/envelope';
import { LINKED_IDENTITIES, LinkedIdentitiesSource } from '../members/linked-identities';
import { Member } from '../members/member.entity';
import { MembersService } from '../members/members.service';
import { PasswordHasher } from '../security/password-hasher';
import { PasswordPolicy } from '../security/password-policy';
import { ClientFacts } from '../sessions/client-facts';
import { sessionIdOf } from '../sessions/session-id';
import { SessionsService } from '../sessions/sessions.service';
import { CodeTarget, VerificationService } from '../verification/verification.service';
import { StepUpService } from '../factors/step-up.service';
import { ChangePasswordRequest, ResetPasswordRequest } from './dtos/auth.dto';

/** Change the password (signed in) or reset it with a code; both end other sessions. */
@Injectable()
export class PasswordService {
  constructor(
    private readonly members: MembersService,
    private readonly hasher: PasswordHasher,
    private readonly sessions: SessionsService,
    private readonly verification: VerificationService,
    private readonly policy: PasswordPolicy,
    private readonly stepUp: StepUpService,
    @Optional() @Inject(LINKED_IDENTITIES) private readonly identities?: LinkedIdentitiesSource,
  ) {}

  async change(principal: Principal, body: ChangePasswordRequest): Promise<{ revokedSessions: number }> {
    const member = await this.members.findById(principal.id);
    if (!member) throw new BusinessException(ErrorCode.UNAUTHORIZED);
    this.policy.assertAcceptable('newPassword', body.newPassword);
    await this.stepUp.assert(member.id, sessionIdOf(principal));
    if (member.passwordHash) {
      const check = await this.hasher.verify(member.passwordHash, body.oldPassword ?? '');
      if (!check.ok) throw new BusinessException(ErrorCode.BAD_CREDENTIALS, msg('auth.oldPasswordWrong'));
    } else {
      await this.proveFirstPassword(member, body);
    }
    // Only over the hash just checked (or still none): a reset by code in between keeps its password.
    const stored = await this.members.replacePassword(member.id, member.passwordHash, body.newPassword);
    if (!stored) throw new BusinessException(ErrorCode.BAD_CREDENTIALS, msg('auth.oldPasswordWrong'));
    const revokedSessions = await this.sessions.revokeAll(member.id, 'password_changed', sessionIdOf(principal));
    return { revokedSessions };
  }

  /**
   * A member without a password (phone or third-party sign-up) sets one only with a fresh code sent to
   * their verified phone or email: an access token alone (a stolen or left-open session) must not be
   * able to add a lasting way into the account.
   */
  private async proveFirstPassword(member: Member, body: ChangePasswordRequest): Promise<void> {
    const channels = {
      sms: member.phoneVerifiedTime ? member.phone : null,
      email: member.emailVerifiedTime ? member.email : null,
    };
    const type = body.type ?? (channels.sms ? 'sms' : 'email');
    const target = channels[type];
    if (!target) {
      throw new BusinessException(ErrorCode.CONFLICT, msg('auth.firstPasswordNeedsContact'), {
        details: { field: 'type' },
      });
    }
    if (!body.code) {
      const message = `a code sent to your verified ${type === 'sms' ? 'phone' : 'email'} (send-code) is required to set a first password`;
      throw fieldError('code', 'firstPasswordCode', message);
    }
    await this.verification.check({ channel: type, target }, body.code, true);
  }

  /** `client`: whose turn the new password's hash waits in (HashSlots, by address), as a sign-in's does. */
  async reset(body: ResetPasswordRequest, client?: ClientFacts): Promise<{ revokedSessions: number }> {
    this.policy.assertAcceptable('newPassword', body.newPassword);
    const target =
      body.type === 'sms'
        ? { channel: 'sms' as const, target: body.phone! }
        : { channel: 'email' as const, target: body.email! };
    // The code is checked, the new password hashed, and only then the code used up: a hash refused for a full
    // queue (503, HashSlots) leaves the code usable for the retry. No hash is made without a right code.
    await this.verification.check(target, body.code, false);
    const hash = await this.hasher.hash(body.newPassword, client ? addressLimitKey(client.ip) : undefined);
    await this.verification.check(target, body.code, true);
    const member = await this.recoverableBy(target);
    // The caller just proved they own the phone or mailbox, so saying "no member" reveals nothing new.
    if (!member)
      throw new BusinessException(
        ErrorCode.NOT_FOUND,
        msg(target.channel === 'sms' ? 'auth.noMemberWithPhone' : 'auth.noMemberWithEmail'),
      );
    await this.members.storePasswordHash(member.id, hash);
    const revokedSessions = await this.sessions.revokeAll(member.id, 'password_reset');
    return { revokedSessions };
  }

  /**
   * The member a proven owner of this phone or email may set the password of. A verified holder is.
   * An unproven claim (e.g. the website's sign-up, which sends no code) is only when the account has
   * no other way in (no verified phone or email, no linked identity): the new password and the ended
   * sessions then leave nobody but the address owner able to use it, and the address becomes verified.
   * A claimant account with another way in is someone else's: the claim is removed from it (the owner
   * takes the address back) and no member is answered, so the owner never gets into that account.
   */
  private async recoverableBy(target: CodeTarget): Promise<Member | null> {
    const sms = target.channel === 'sms';
    const member = sms ? await this.members.findByPhone(target.target) : await this.members.findByEmail(target.target);
    if (!member || (sms ? member.phoneVerifiedTime : member.emailVerifiedTime)) return member;
    const otherWayIn =
      (sms ? member.emailVerifiedTime : member.phoneVerifiedTime) != null ||
      ((await this.identities?.listForMember(member.id))?.length ?? 0) > 0;
    const channel = sms ? 'phone' : 'email';
    if (otherWayIn) {
      await this.members.releaseClaim(channel, target.target, member.id);
      return null;
    }
    await this.members.bindProvenContact(member.id, channel, target.target);
    return member;
  }
}
