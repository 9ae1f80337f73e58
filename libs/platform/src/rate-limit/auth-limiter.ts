import { Injectable } from '@nestjs/common';
import { ThrottlerException } from '@nestjs/throttler';
import { AuthLimiter, LimitedCaller, LimitedResponse, Principal } from '@app/auth';
import { Clock } from '../clock/clock';
import { BaseConfig } from '../config/base.config';
import { SharedState } from '../shared-state/shared-state';
import { BatchedCounter } from './batched-counter';
import { clientLimitKey } from './address-limit-key';

const MINUTE = 60_000;
const MAX_BLOCKED = 100_000;

/**
 * Rate limits around authentication on protected routes (the per-IP throttler skips those, see
 * PlatformThrottlerGuard):
 * - missing or refused credentials count per client address (its limit key: IPv6 by network, see
 *   addressLimitKey) in shared state (a round trip per failure; on PostgreSQL, failures asked together
 *   share one statement: PostgresSharedState.hit); past RATE_LIMIT_PER_MINUTE in a minute the address is blocked for the rest of it, and
 *   this replica refuses it before looking at its credentials. Another replica learns of the block at
 *   the address's next failure there, so at most one more guess per replica is checked;
 * - members are limited per member (RATE_LIMIT_PER_MINUTE a minute, counted in shared state in
 *   batches, see BatchedCounter); API keys have their own requests-per-minute; the admin token has none.
 */
@Injectable()
export class PlatformAuthLimiter implements AuthLimiter {
  private readonly blocked = new Map<string, number>();
  private readonly members: BatchedCounter;

  constructor(
    private readonly state: SharedState,
    private readonly config: BaseConfig,
    clock: Clock,
  ) {
    // Member minutes are cut by the app's Clock: a test that holds it still keeps its calls in one window.
    this.members = new BatchedCounter(state, 'ratelimit:member:', 1000, () => clock.now());
  }

  before(req: LimitedCaller, res: LimitedResponse | null): void {
    const ip = clientLimitKey(req, this.config.RATE_LIMIT_IPV6_PREFIX);
    const until = this.blocked.get(ip);
    if (until === undefined) return;
    const left = until - Date.now();
    if (left <= 0) {
      this.blocked.delete(ip);
      return;
    }
    refuse(res, left);
  }

  async failed(req: LimitedCaller, res: LimitedResponse | null): Promise<void> {
    const ip = clientLimitKey(req, this.config.RATE_LIMIT_IPV6_PREFIX);
    const key = `throttle:auth-failed:${ip}`;
    const blockKey = `throttle:block:auth-failed:${ip}`;
    const { blockedMs, count, ttlMs } = await this.state.hit(key, blockKey, MINUTE);
    let left = blockedMs;
    if (!left && count > this.config.RATE_LIMIT_PER_MINUTE) {
      left = Math.max(1, ttlMs);
      await this.state.setIfAbsent(blockKey, '1', left);
    }
    if (!left) return;
    if (this.blocked.size >= MAX_BLOCKED) this.blocked.clear();
    this.blocked.set(ip, Date.now() + left);
    refuse(res, left);
  }

  async succeeded(_req: LimitedCaller, res: LimitedResponse | null, principal: Principal): Promise<void> {
    if (principal.kind !== 'member') return;
    const left = await this.members.hit(principal.id, this.config.RATE_LIMIT_PER_MINUTE, MINUTE);
    if (left > 0) refuse(res, left);
  }
}

function refuse(res: LimitedResponse | null, ms: number): never {
  if (typeof res?.setHeader === 'function' && !res.headersSent)
    res.setHeader('Retry-After', String(Math.max(1, Math.ceil(ms / 1000))));
  throw new ThrottlerException('Too many requests, retry later');
}
