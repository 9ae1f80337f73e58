import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { AuditLog, systemContext } from '@app/audit';
import { WebhookOutbox } from '@app/webhooks';

/** A sign-in lock that just started (login-lockout.service.ts): which scope, whom, from where, until when. */
export interface StartedLock {
  /** `account_address`: one account from one network; `account`: one account from anywhere; `address`: one network, any account. */
  scope: 'account_address' | 'account' | 'address';
  /** The member locked, or null for an address lock or an account name no member has. */
  memberId: string | null;
  /** The address's limit key (IPv6 by its prefix): the network the failures came from (the last one for `account`). */
  address: string;
  failures: number;
  lockedUntil: Date;
}

/**
 * The lock itself lives in shared state with an expiry; what is recorded here is its start: an audit row
 * made by the system (target: the member, or the address for an address-wide lock) and, for a member,
 * the member.login_locked event, both in one transaction.
 */
@Injectable()
export class LoginLockoutRepository {
  constructor(
    private readonly db: DataSource,
    private readonly audit: AuditLog,
    private readonly outbox: WebhookOutbox,
  ) {}

  async recordStart(lock: StartedLock, requestId: string | null): Promise<void> {
    await this.db.transaction(async (m) => {
      const facts = { scope: lock.scope, failures: lock.failures, lockedUntil: lock.lockedUntil.toISOString() };
      if (lock.memberId === null) {
        await this.audit.record(m, {
          ...systemContext(requestId, lock.address),
          action: 'address.login_locked',
          target: { type: 'address', id: lock.address },
          after: facts,
        });
        return;
      }
      await this.audit.record(m, {
        ...systemContext(requestId, lock.address),
        action: 'member.login_locked',
        target: { type: 'member', id: lock.memberId },
        after: facts,
      });
      await this.outbox.enqueue(m, 'member.login_locked', {
        member_id: lock.memberId,
        scope: lock.scope,
        address: lock.address,
        failures: lock.failures,
        locked_until: lock.lockedUntil.toISOString(),
      });
    });
  }
}
