import { Injectable } from '@nestjs/common';
import { AuditContext } from '@app/audit';
import { Principal } from '@app/auth';
import { BusinessException, ErrorCode } from '@app/envelope';
import { MembersService } from '../members/members.service';
import { ClientFacts } from '../sessions/client-facts';
import { sessionIdOf } from '../sessions/session-id';
import { Requester } from './factor-settings.service';

/** The signed-in member behind a request, read once at the edge (controllers) for the use cases. */
@Injectable()
export class Requesters {
  constructor(private readonly members: MembersService) {}

  async of(principal: Principal, client: ClientFacts): Promise<Requester & { sessionId: string }> {
    const member = await this.members.findById(principal.id);
    if (!member) throw new BusinessException(ErrorCode.UNAUTHORIZED);
    return {
      member,
      sessionId: sessionIdOf(principal) ?? '',
      locale: client.locale,
      audit: memberActing(member.id, client),
    };
  }
}

/**
 * The audit facts of a member's own request: the member is the actor, also while signing in (an enforced
 * enrolment, auth/second-factor-login.service.ts, has no principal yet).
 */
export function memberActing(memberId: string, client: Pick<ClientFacts, 'audit'>): AuditContext {
  return { ...client.audit, actor: { kind: 'member', id: memberId } };
}
