import type { EntityManager } from 'typeorm';
import type { AuditContext, AuditLog } from '@app/audit';
import type { WebhookOutbox } from '@app/webhooks';
import type { Member } from './member.entity';

/** How a member came to be: the `method` of the member.registered event (docs/audit-log-and-webhooks.md). */
export type RegistrationMethod = 'password' | 'phone_code' | 'oauth' | 'wechat' | 'admin_bootstrap';

export interface MemberOrigin {
  method: RegistrationMethod;
  /** The third party's registration id (`github`, `wechat-mp`...) for oauth and wechat. */
  provider?: string;
  /** Who made it, when it is recorded in the audit log too (admin bootstrap at boot or by the CLI). */
  audit?: { ctx: AuditContext; action: string };
}

/**
 * The member.registered event (and the audit row an origin asks for) of a member just inserted, in the
 * insert's transaction (members.repository.ts). The payload names the member, never its contact details
 * or secrets: a receiver that needs more asks the admin API (GET /api/v1/admin/members/{id}).
 */
export async function recordRegistration(
  m: EntityManager,
  member: Member,
  origin: MemberOrigin,
  audit: AuditLog,
  outbox: WebhookOutbox,
  at: Date,
): Promise<void> {
  if (origin.audit) {
    await audit.record(m, {
      ...origin.audit.ctx,
      action: origin.audit.action,
      target: { type: 'member', id: member.id },
      after: { username: member.username, roles: member.roles, status: member.status },
    });
  }
  await outbox.enqueue(m, 'member.registered', {
    member_id: member.id,
    username: member.username,
    nickname: member.nickname,
    method: origin.method,
    ...(origin.provider ? { provider: origin.provider } : {}),
    registered_at: at.toISOString(),
  });
}
