import { Injectable } from '@nestjs/common';
import type { Request } from 'express';
import { auditContextOf, AuditContext } from '@app/audit';
import { Principal } from '@app/auth';
import { BusinessException, ErrorCode, localeOf } from '@app/envelope';
import { MembersService } from '../members/members.service';
import { sessionIdOf } from '../sessions/session-id';
import { Requester } from './factor-settings.service';

/** The signed-in member behind a request, read once at the edge (controllers) for the use cases. */
@Injectable()
export class Requesters {
  constructor(private readonly members: MembersService) {}

  async of(principal: Principal, req: Request): Promise<Requester & { sessionId: string }> {
    const member = await this.members.findById(principal.id);
    if (!member) throw new BusinessException(ErrorCode.UNAUTHORIZED);
    return { member, sessionId: sessionIdOf(principal) ?? '', locale: localeOf(req), audit: memberActing(member.id, req) };
  }
}

/**
 * The audit facts of a member's own request: the member is the actor, also while signing in (an enforced
 * enrolment, auth/second-factor-login.service.ts, has no principal yet).
 */
export function memberActing(memberId: string, req: Request): AuditContext {
  return { ...auditContextOf(req as Parameters<typeof auditContextOf>[0]), actor: { kind: 'member', id: memberId } };
}
