import { Injectable, Logger } from '@nestjs/common';
import { BusinessException, ErrorCode, fieldError, msg } from '@app/envelope';
import { addressLimitKey } from '@app/platform';
import { MembersService } from '../members/members.service';
import { ClientFacts } from '../sessions/client-facts';
import { LoginLockoutService } from '../security/login-lockout.service';
import { PasswordHasher } from '../security/password-hasher';
import { PasswordPolicy } from '../security/password-policy';
import { VerificationService } from '../verification/verification.service';
import { LoginRequest, RegisterRequest } from './dtos/auth.dto';
import { LoginResult } from './dtos/mfa.dto';
import { RegisterResponse } from './dtos/register.dto';
import { LoginService } from './login.service';

/** Register with a password, and log in with account + password. */
@Injectable()
export class PasswordLoginService {
  private readonly logger = new Logger('PasswordLogin');

  constructor(
    private readonly members: MembersService,
    private readonly hasher: PasswordHasher,
    private readonly lockout: LoginLockoutService,
    private readonly login: LoginService,
    private readonly policy: PasswordPolicy,
    private readonly verification: VerificationService,
  ) {}

  /**
   * Creates the member and opens no session (RegisterResponse). An email or phone with its code
   * (`emailCode`, `phoneCode`, used up here) is stored verified; without one it is an unproven claim.
   */
  async register(body: RegisterRequest, client?: Pick<ClientFacts, 'ip'>): Promise<RegisterResponse> {
    this.policy.assertAcceptable('password', body.password);
    for (const [codeField, addressField] of [
      ['emailCode', 'email'],
      ['phoneCode', 'phone'],
    ] as const) {
      if (body[codeField] !== undefined && !body[addressField]) {
        throw fieldError(codeField, 'codeWithoutAddress', `${codeField} is given without ${addressField}`, {
          address: addressField,
        });
      }
    }
    if (body.emailCode) await this.verification.check({ channel: 'email', target: body.email! }, body.emailCode, true);
    if (body.phoneCode) await this.verification.check({ channel: 'sms', target: body.phone! }, body.phoneCode, true);
    const member = await this.members.create(
      {
        username: body.username,
        email: body.email,
        phone: body.phone,
        nickname: body.nickname,
        password: body.password,
        emailProven: Boolean(body.emailCode),
        phoneProven: Boolean(body.phoneCode),
        // The password's hash waits its turn under the caller's address (HashSlots), as a sign-in does.
        hashOwner: client ? addressLimitKey(client.ip) : undefined,
      },
      { method: 'password' },
    );
    return {
      memberId: member.id,
      username: member.username,
      nickname: member.nickname,
      avatarUrl: member.avatarUrl,
      emailVerified: member.emailVerifiedTime != null,
      phoneVerified: member.phoneVerifiedTime != null,
    };
  }

  async loginWithPassword(body: LoginRequest, client: ClientFacts): Promise<LoginResult> {
    const { ip } = client;
    const member = await this.members.findByAccount(body.account);
    // Unknown accounts are locked under their name, so lock behaviour reveals nothing either.
    const lockKey = member ? `m:${member.id}` : `u:${body.account.toLowerCase()}`;
    await this.lockout.assertNotLocked(lockKey, ip);
    // The address's turn among the sign-ins waiting for a hash (HashSlots): one address cannot fill the queue.
    const check = await this.hasher.verify(member?.passwordHash, body.password, addressLimitKey(ip));
    if (!member || !check.ok) {
      await this.lockout.recordFailure(lockKey, ip, client.requestId);
      throw new BusinessException(ErrorCode.BAD_CREDENTIALS);
    }
    if (member.status !== 'active') throw new BusinessException(ErrorCode.ACCOUNT_LOCKED, msg('auth.accountDisabled'));
    await this.lockout.recordSuccess(lockKey, ip);
    // The hash verified above; every later write and the session are conditional on it still being stored.
    let verified = member.passwordHash!;
    if (check.needsRehash) {
      const rehashed = await this.members.rehashPassword(member.id, verified, body.password);
      // Replaced since the check (a reset by code, a change): this password no longer opens the account.
      if (!rehashed) throw new BusinessException(ErrorCode.BAD_CREDENTIALS);
      verified = rehashed;
      this.logger.log(`member ${member.id}: password rehashed to argon2id`);
    }
    return this.login.issueLogin(member, 'password', client, verified);
  }
}
