import { Injectable } from '@nestjs/common';
import type { Request } from 'express';
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
    return { member, sessionId: sessionIdOf(principal) ?? '', locale: localeOf(req) };
  }
}
