import { Injectable, Logger } from '@nestjs/common';
import { BusinessException, ErrorCode, msg } from '@app/envelope';
import { addressLimitKey, Clock, SharedState, TimedHolds } from '@app/platform';
import { MembershipConfig } from '../config/membership.config';
import { LoginLockoutRepository, StartedLock } from './login-lockout.repository';

/**
 * Temporary locks after repeated wrong passwords, kept in SharedState with an expiry:
 * - per account and client IP (LOGIN_MAX_FAILURES): stops one client guessing one account;
 * - per account from any IP (LOGIN_ACCOUNT_MAX_FAILURES, default 100): stops a botnet guessing freely;
 * - per client IP across accounts (LOGIN_IP_MAX_FAILURES): stops password spraying.
 * A lock ends after LOGIN_LOCK_MS and failed tries while locked are not counted. A stranger can keep
 * an account's account-wide lock going, so that lock (and the IP-wide one) does not apply to a client
 * IP the member logged in from before (a "known origin", LOGIN_KNOWN_ORIGIN_TTL_MS): the member's
 * usual network still gets in with the right password, anyone else is told to log in with a code.
 * The failure that starts a lock (the one whose hold it starts: the hold is set only if absent, so one
 * request on one replica) records it in the audit log and, for a member, as member.login_locked.
 */
@Injectable()
export class LoginLockoutService {
  private readonly log = new Logger('LoginLockout');

  constructor(
    private readonly state: SharedState,
    private readonly holds: TimedHolds,
    private readonly config: MembershipConfig,
    private readonly locks: LoginLockoutRepository,
    private readonly clock: Clock,
  ) {}

  private scopes(account: string, ip: string) {
    // Per-address scopes count the address's limit key (IPv6 by its /64), like every per-address limit.
    const net = addressLimitKey(ip, this.config.RATE_LIMIT_IPV6_PREFIX);
    return [
      {
        name: `acct-ip:${account}:${net}`,
        max: this.config.LOGIN_MAX_FAILURES,
        waivedForKnownOrigin: false,
        scope: 'account_address' as const,
      },
      {
        name: `acct:${account}`,
        max: this.config.LOGIN_ACCOUNT_MAX_FAILURES,
        waivedForKnownOrigin: true,
        scope: 'account' as const,
      },
      {
        name: `ip:${net}`,
        max: this.config.LOGIN_IP_MAX_FAILURES,
        waivedForKnownOrigin: true,
        scope: 'address' as const,
      },
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
      throw new BusinessException(ErrorCode.ACCOUNT_LOCKED, msg('auth.loginLocked'), {
        retryAfterSeconds: Math.ceil(ttl / 1000),
      });
    }
  }

  /** `account` as for assertNotLocked (`m:<member id>` or `u:<name>`); `requestId` goes to the audit row of a lock it starts. */
  async recordFailure(account: string, ip: string, requestId: string | null = null): Promise<void> {
    const window = this.config.LOGIN_LOCK_MS;
    const net = addressLimitKey(ip, this.config.RATE_LIMIT_IPV6_PREFIX);
    for (const scope of this.scopes(account, ip)) {
      const { count } = await this.state.incr(`login:fail:${scope.name}`, window);
      if (count >= scope.max) {
        // A known origin's failures still count while the account-wide or address lock stands; reaching the
        // limit again then starts nothing, and records nothing.
        const started = await this.holds.start(`login:lock:${scope.name}`, window);
        await this.state.del(`login:fail:${scope.name}`);
        if (started) await this.recordLock(account, net, scope.scope, count, window, requestId);
      }
    }
  }

  /**
   * An account lock of a name no member has is not recorded (it would only log a stranger's typing). The
   * lock stands whether or not its record could be written: a failed write is logged, the caller still
   * gets its 401 (never a 500 that would tell a guesser something went differently).
   */
  private async recordLock(
    account: string,
    net: string,
    scope: StartedLock['scope'],
    failures: number,
    window: number,
    requestId: string | null,
  ): Promise<void> {
    const memberId = scope !== 'address' && account.startsWith('m:') ? account.slice(2) : null;
    if (scope !== 'address' && memberId === null) return;
    try {
      await this.locks.recordStart(
        { scope, memberId, address: net, failures, lockedUntil: new Date(this.clock.now() + window) },
        requestId,
      );
    } catch (e) {
      this.log.error(
        `sign-in lock (${scope}) of ${memberId ? `member ${memberId}` : net} not recorded: ${(e as Error).message}`,
      );
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
