import { Injectable } from '@nestjs/common';
import { Principal } from '@app/auth';
import { BusinessException, ErrorCode } from '@app/envelope';
import { MembersService } from '../members/members.service';
import { PasswordHasher } from '../security/password-hasher';
import { SessionsService } from '../sessions/sessions.service';
import { VerificationService } from '../verification/verification.service';
import { ChangePasswordRequest, ResetPasswordRequest } from './dtos/auth.requests';

/** Change the password (signed in) or reset it with a code; both end other sessions. */
@Injectable()
export class PasswordService {
  constructor(
    private readonly members: MembersService,
    private readonly hasher: PasswordHasher,
    private readonly sessions: SessionsService,
    private readonly verification: VerificationService,
  ) {}

  async change(principal: Principal, body: ChangePasswordRequest): Promise<{ revokedSessions: number }> {
    const member = await this.members.findById(principal.id);
    if (!member) throw new BusinessException(ErrorCode.UNAUTHORIZED);
    if (member.passwordHash) {
      const check = await this.hasher.verify(member.passwordHash, body.oldPassword ?? '');
      if (!check.ok) throw new BusinessException(ErrorCode.BAD_CREDENTIALS, 'Old password is wrong');
    }
    await this.members.setPassword(member.id, body.newPassword);
    const revokedSessions = await this.sessions.revokeAll(member.id, 'password_changed', principal.claims?.sid);
    return { revokedSessions };
  }

  async reset(body: ResetPasswordRequest): Promise<{ revokedSessions: number }> {
    const target = body.type === 'sms' ? { channel: 'sms' as const, target: body.phone! } : { channel: 'email' as const, target: body.email! };
    await this.verification.check(target, body.code, true);
    const member = target.channel === 'sms' ? await this.members.findByPhone(target.target) : await this.members.findByEmail(target.target);
    // The caller just proved they own the phone or mailbox, so saying "no member" reveals nothing new.
    if (!member) throw new BusinessException(ErrorCode.NOT_FOUND, `No member with this ${target.channel === 'sms' ? 'phone' : 'email'}`);
    await this.members.setPassword(member.id, body.newPassword);
    const revokedSessions = await this.sessions.revokeAll(member.id, 'password_reset');
    return { revokedSessions };
  }
}
