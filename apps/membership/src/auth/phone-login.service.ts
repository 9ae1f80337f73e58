import { Injectable } from '@nestjs/common';
import { BusinessException, ErrorCode, msg } from '@app/envelope';
import { MembershipConfig } from '../config/membership.config';
import { Member } from '../members/member.entity';
import { MembersService } from '../members/members.service';
import { ClientFacts } from '../sessions/client-facts';
import { LoginLockoutService } from '../security/login-lockout.service';
import { VerificationService } from '../verification/verification.service';
import { PhoneLoginRequest } from './dtos/auth.dto';
import { LoginResult } from './dtos/mfa.dto';
import { LoginService } from './login.service';

/** Log in with an SMS code into the account holding the phone verified; the first login of an unknown phone registers it (PHONE_LOGIN_AUTO_REGISTER). */
@Injectable()
export class PhoneLoginService {
  constructor(
    private readonly verification: VerificationService,
    private readonly members: MembersService,
    private readonly login: LoginService,
    private readonly config: MembershipConfig,
    private readonly lockout: LoginLockoutService,
  ) {}

  async loginByPhone(body: PhoneLoginRequest, client: ClientFacts): Promise<LoginResult> {
    await this.verification.check({ channel: 'sms', target: body.phone }, body.code, true);
    const member = await this.ownerOf(body.phone);
    if (member.status !== 'active') throw new BusinessException(ErrorCode.ACCOUNT_LOCKED, msg('auth.accountDisabled'));
    // The owner proved the phone from here: this network gets past an account-wide password lock.
    await this.lockout.rememberOrigin(`m:${member.id}`, client.ip);
    return this.login.issueLogin(member, 'phone', client);
  }

  /**
   * The member whose verified phone this is, for a caller who just proved it. An unproven claim on
   * the phone is someone's say-so, never a login: it is removed from that member and the owner gets
   * (or, with PHONE_LOGIN_AUTO_REGISTER, creates) their own account.
   */
  private async ownerOf(phone: string): Promise<Member> {
    const holder = await this.members.findByPhone(phone);
    if (holder?.phoneVerifiedTime) return holder;
    if (holder) await this.members.releaseClaim('phone', phone, holder.id);
    if (!this.config.PHONE_LOGIN_AUTO_REGISTER)
      throw new BusinessException(ErrorCode.BAD_CREDENTIALS, msg('auth.noMemberWithPhone'));
    try {
      return await this.members.create({ phone, phoneProven: true }, { method: 'phone_code' });
    } catch (err) {
      // A concurrent first login of the same phone created it.
      const again = await this.members.findByPhone(phone);
      if (again?.phoneVerifiedTime) return again;
      throw err;
    }
  }
}
