import type { EntityManager } from 'typeorm';
import type { AuditContext, AuditLog } from '@app/audit';
import type { WebhookOutbox } from '@app/webhooks';

/** What a member did to their own factors: the `change` of member.factor_changed (an admin's reset is `reset`, admin-members.repository.ts). */
export type FactorChange =
  'totp_enabled' | 'totp_disabled' | 'passkey_added' | 'passkey_removed' | 'recovery_codes_regenerated';

/** A factor change to record with it: who asked (the member, from which request) and what changed. */
export interface FactorChangeRecord {
  ctx: AuditContext;
  memberId: string;
  change: FactorChange;
  /** The passkey added or removed. */
  passkey?: { id: string; name: string };
  /** The member's first factor (it came with recovery codes; a field named recovery_codes would be scrubbed, libs/audit/src/audit-scrub.ts). */
  firstFactor?: boolean;
}

/** The audit row (member.factor_changed) and the webhook event of one change, in the change's transaction (factors.repository.ts). */
export async function recordFactorChange(
  m: EntityManager,
  r: FactorChangeRecord,
  audit: AuditLog,
  outbox: WebhookOutbox,
): Promise<void> {
  const detail = {
    change: r.change,
    ...(r.passkey ? { passkey: r.passkey } : {}),
    ...(r.firstFactor ? { firstFactor: true } : {}),
  };
  await audit.record(m, {
    ...r.ctx,
    action: 'member.factor_changed',
    target: { type: 'member', id: r.memberId },
    after: detail,
  });
  await outbox.enqueue(m, 'member.factor_changed', {
    member_id: r.memberId,
    change: r.change,
    ...(r.passkey ? { passkey: r.passkey } : {}),
    by: r.ctx.actor,
  });
}
