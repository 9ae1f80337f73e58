import { Injectable } from '@nestjs/common';
import { BusinessException, ErrorCode, msg } from '@app/envelope';
import { addressLimitKey, SharedState, TimedHolds } from '@app/platform';
import { MembershipConfig } from '../config/membership.config';

/**
 * Temporary locks after repeated wrong passwords, kept in SharedState with an expiry:
 * - per account and client IP (LOGIN_MAX_FAILURES): stops one client guessing one account;
 * - per account from any IP (LOGIN_ACCOUNT_MAX_FAILURES, default 100): stops a botnet guessing freely;
 * - per client IP across accounts (LOGIN_IP_MAX_FAILURES): stops password spraying.
 * A lock ends after LOGIN_LOCK_MS and failed tries while locked are not counted. A stranger can keep
 * an account's account-wide lock going, so that lock (and the IP-wide one) does not apply to a client
 * IP the member logged in from before (a "known origin", LOGIN_KNOWN_ORIGIN_TTL_MS): the member's
 * usual network still gets in with the right password, anyone else is told to log in with a code.
 */
@Injectable()
export class LoginLockoutService {
  constructor(
    private readonly state: SharedState,
    private readonly holds: TimedHolds,
    private readonly config: MembershipConfig,
  ) {}

  private scopes(account: string, ip: string) {
    // Per-address scopes count the address's limit key (IPv6 by its /64), like every per-address limit.
    const net = addressLimitKey(ip, this.config.RATE_LIMIT_IPV6_PREFIX);
    return [
      { name: `acct-ip:${account}:${net}`, max: this.config.LOGIN_MAX_FAILURES, waivedForKnownOrigin: false },
      { name: `acct:${account}`, max: this.config.LOGIN_ACCOUNT_MAX_FAILURES, waivedForKnownOrigin: true },
      { name: `ip:${net}`, max: this.config.LOGIN_IP_MAX_FAILURES, waivedForKnownOrigin: true },
    ];
  }

  private knownKey(account: string, ip: string): string {
    return `login:known:${account}:${ip}`;
  }

  /**
   * Throws 10008 with Retry-After while a scope that applies is locked. `account` is a member id or a
   * normalized unknown account (which never has a known origin, so it answers like any stranger's).
   */
  async assertNotLocked(account: string, ip: string): Promise<void> {
    let known: boolean | undefined;
    for (const scope of this.scopes(account, ip)) {
      const ttl = await this.holds.remaining(`login:lock:${scope.name}`);
      if (ttl <= 0) continue;
      if (scope.waivedForKnownOrigin) {
        known ??= (await this.state.get(this.knownKey(account, ip))) !== null;
        if (known) continue;
      }
      throw new BusinessException(ErrorCode.ACCOUNT_LOCKED, msg('auth.loginLocked'), { retryAfterSeconds: Math.ceil(ttl / 1000) });
    }
  }

  async recordFailure(account: string, ip: string): Promise<void> {
    const window = this.config.LOGIN_LOCK_MS;
    for (const scope of this.scopes(account, ip)) {
      const { count } = await this.state.incr(`login:fail:${scope.name}`, window);
      if (count >= scope.max) {
        await this.holds.start(`login:lock:${scope.name}`, window);
        await this.state.del(`login:fail:${scope.name}`);
      }
    }
  }

  /** A correct password (or code login) from this IP: it becomes a known origin of the account. */
  async recordSuccess(account: string, ip: string): Promise<void> {
    await this.state.del(`login:fail:${this.scopes(account, ip)[0].name}`);
    await this.rememberOrigin(account, ip);
  }

  async rememberOrigin(account: string, ip: string): Promise<void> {
    await this.state.set(this.knownKey(account, ip), '1', this.config.LOGIN_KNOWN_ORIGIN_TTL_MS);
  }
}
