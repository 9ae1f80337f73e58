import { Injectable } from '@nestjs/common';
import { BusinessException, ErrorCode } from '@app/envelope';
import { SharedState } from '@app/platform';
import { MembershipConfig } from '../config/membership.config';

/**
 * Temporary locks after repeated wrong passwords, kept in SharedState with an expiry:
 * per account and client IP (LOGIN_MAX_FAILURES), per account from any IP
 * (LOGIN_ACCOUNT_MAX_FAILURES, so a botnet cannot guess freely) and per IP across accounts
 * (LOGIN_IP_MAX_FAILURES). A lock always ends after LOGIN_LOCK_MS and failed tries while
 * locked do not extend it, so a stranger can delay a member but never lock them out for good.
 */
@Injectable()
export class LoginLockoutService {
  constructor(
    private readonly state: SharedState,
    private readonly config: MembershipConfig,
  ) {}

  private scopes(account: string, ip: string) {
    return [
      { name: `acct-ip:${account}:${ip}`, max: this.config.LOGIN_MAX_FAILURES },
      { name: `acct:${account}`, max: this.config.LOGIN_ACCOUNT_MAX_FAILURES },
      { name: `ip:${ip}`, max: this.config.LOGIN_IP_MAX_FAILURES },
    ];
  }

  /** Throws 10008 with Retry-After while any scope is locked. `account` is a member id or a normalized unknown account. */
  async assertNotLocked(account: string, ip: string): Promise<void> {
    for (const scope of this.scopes(account, ip)) {
      const ttl = await this.state.ttl(`login:lock:${scope.name}`);
      if (ttl > 0) {
        throw new BusinessException(ErrorCode.ACCOUNT_LOCKED, 'Too many failed logins; account temporarily locked, try again later', {
          retryAfterSeconds: Math.ceil(ttl / 1000),
        });
      }
    }
  }

  async recordFailure(account: string, ip: string): Promise<void> {
    const window = this.config.LOGIN_LOCK_MS;
    for (const scope of this.scopes(account, ip)) {
      const { count } = await this.state.incr(`login:fail:${scope.name}`, window);
      if (count >= scope.max) {
        await this.state.setIfAbsent(`login:lock:${scope.name}`, '1', window);
        await this.state.del(`login:fail:${scope.name}`);
      }
    }
  }

  async recordSuccess(account: string, ip: string): Promise<void> {
    await this.state.del(`login:fail:acct-ip:${account}:${ip}`);
  }
}
