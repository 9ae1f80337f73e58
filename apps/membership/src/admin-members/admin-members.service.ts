import { Injectable } from '@nestjs/common';
import { AuditContext } from '@app/audit';
import { BusinessException, ErrorCode, msg } from '@app/envelope';
import { Clock } from '@app/platform';
import { SessionsService } from '../sessions/sessions.service';
import { AdminMembersRepository, MemberRow } from './admin-members.repository';
import { AdminFactorsView, AdminMemberListView, FactorsResetView, SetRoleRequest } from './dtos/admin-members.dto';

/**
 * The members admin API's use cases. Writes end sessions in the database transaction; afterwards this
 * replica's session-check cache forgets the member (SessionsService), so its tokens are refused here at
 * once and on other replicas within SESSION_CHECK_CACHE_MS.
 */
@Injectable()
export class AdminMembersService {
  constructor(
    private readonly members: AdminMembersRepository,
    private readonly sessions: SessionsService,
    private readonly clock: Clock,
  ) {}

  async list(q: string | undefined, offset = 0, limit = 20): Promise<AdminMemberListView> {
    const { items, total, capped } = await this.members.search(q?.trim() || undefined, offset, limit);
    return { items, total, totalCapped: capped, offset, limit };
  }

  async member(id: string): Promise<MemberRow> {
    return found(await this.members.member(id));
  }

  async sessionsOf(id: string) {
    await this.member(id);
    return this.members.sessions(id);
  }

  async identitiesOf(id: string) {
    await this.member(id);
    return this.members.identities(id);
  }

  async factorsOf(id: string): Promise<AdminFactorsView> {
    await this.member(id);
    const f = await this.members.factors(id);
    return {
      totp: { enabled: f.totpTime !== null, createdTime: f.totpTime },
      passkeys: f.passkeys,
      recoveryCodes: { remaining: f.recoveryCodes },
    };
  }

  async setStatus(id: string, status: 'active' | 'disabled', ctx: AuditContext): Promise<MemberRow> {
    if (status === 'disabled') notSelf(id, ctx);
    found(await this.members.setStatus(id, status, ctx, new Date(this.clock.now())));
    this.sessions.forget(id);
    return this.member(id);
  }

  async revokeSession(id: string, sessionId: string, ctx: AuditContext): Promise<void> {
    await this.member(id);
    if (!(await this.members.revokeSession(id, sessionId, ctx)))
      throw new BusinessException(ErrorCode.NOT_FOUND, msg('members.sessionNotFound'));
    this.sessions.forget(id);
  }

  async revokeAllSessions(id: string, ctx: AuditContext): Promise<{ sessionsEnded: number }> {
    const sessionsEnded = found(await this.members.revokeAllSessions(id, ctx));
    this.sessions.forget(id);
    return { sessionsEnded };
  }

  async resetFactors(id: string, ctx: AuditContext): Promise<FactorsResetView> {
    const removed = found(await this.members.resetFactors(id, ctx));
    this.sessions.forget(id);
    return removed;
  }

  async setRole(id: string, body: SetRoleRequest, ctx: AuditContext): Promise<MemberRow> {
    notSelf(id, ctx);
    found(await this.members.setRole(id, body.role === 'none' ? null : body.role, ctx));
    // The cached "live" answers hold the roles too.
    this.sessions.forget(id);
    return this.member(id);
  }
}

function found<T>(value: T | null): T {
  if (value === null) throw new BusinessException(ErrorCode.NOT_FOUND, msg('members.notFound'));
  return value;
}

/** An admin cannot lock themself out (disable, or drop their own role): another admin must. */
function notSelf(id: string, ctx: AuditContext): void {
  if (ctx.actor.kind === 'member' && ctx.actor.id === id)
    throw new BusinessException(ErrorCode.CONFLICT, msg('members.notOnYourself'));
}
