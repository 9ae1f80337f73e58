import type { INestApplication } from '@nestjs/common';
import { Principal, withImpliedRoles } from '@app/auth';
import type { ClientFacts } from '../../apps/membership/src/sessions/client-facts';
import { AccessTokenService } from '../../apps/membership/src/auth/access-token.service';
import type { Requester } from '../../apps/membership/src/factors/factor-settings.service';
import { memberActing } from '../../apps/membership/src/factors/requester';
import type { Member } from '../../apps/membership/src/members/member.entity';
import { clientFacts } from './client-facts';

/** Who asks for a factor change, as the security endpoints read it at the edge (factors/requester.ts). */
export function requesterOf(member: Member, sessionId?: string, client: ClientFacts = clientFacts()): Requester {
  return { member, sessionId, locale: client.locale, audit: memberActing(member.id, client) };
}

/** The principal a request bearing the access token `token` carries (auth/member.authenticator.ts). */
export function principalOf(app: INestApplication, token: string): Principal {
  const claims = app.get(AccessTokenService).verify(token);
  if (!claims) throw new Error('not a valid access token');
  return { id: claims.memberId, kind: 'member', roles: withImpliedRoles(['member', ...(claims.roles ?? [])]), claims };
}
