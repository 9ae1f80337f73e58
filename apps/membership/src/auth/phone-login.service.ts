import { Injectable } from '@nestjs/common';
import type { Request } from 'express';
import { BusinessException, ErrorCode } from '@app/envelope';
import { MembershipConfig } from '../config/membership.config';
import { MembersService } from '../members/members.service';
import { VerificationService } from '../verification/verification.service';
import { PhoneLoginRequest } from './dtos/auth.requests';
import { MemberLoginResponse } from './dtos/member-login.response';
import { LoginService } from './login.service';

/** Log in with an SMS code; the first login of an unknown phone registers it (PHONE_LOGIN_AUTO_REGISTER). */
@Injectable()
export class PhoneLoginService {
  constructor(
    private readonly verification: VerificationService,
    private readonly members: MembersService,
    private readonly login: LoginService,
    private readonly config: MembershipConfig,
  ) {}

  async loginByPhone(body: PhoneLoginRequest, req: Request): Promise<MemberLoginResponse> {
    await this.verification.check({ channel: 'sms', target: body.phone }, body.code, true);
    let member = await this.members.findByPhone(body.phone);
    if (!member) {
      if (!this.config.PHONE_LOGIN_AUTO_REGISTER) throw new BusinessException(ErrorCode.BAD_CREDENTIALS, 'No member with this phone');
      try {
        member = await this.members.create({ phone: body.phone });
      } catch (err) {
        // A concurrent first login of the same phone created it.
        member = await this.members.findByPhone(body.phone);
        if (!member) throw err;
      }
    }
    if (member.status !== 'active') throw new BusinessException(ErrorCode.ACCOUNT_LOCKED, 'Account is disabled');
    return this.login.issueLogin(member, 'phone', req);
  }
}
