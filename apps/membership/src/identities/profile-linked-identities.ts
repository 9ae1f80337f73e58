import { Injectable } from '@nestjs/common';
import { LinkedIdentitiesSource, LinkedIdentity, MemberWithIdentities } from '../members/linked-identities';
import { IdentitySummary, MemberIdentitiesRepository } from './member-identities.repository';

const linkedIdentity = (i: IdentitySummary): LinkedIdentity => ({
  provider: i.registrationId,
  openId: i.subject,
  nickname: i.nickname,
  avatarUrl: i.avatarUrl,
  linkedTime: i.createdTime,
});

/** Lists a member's linked identities for the profile (GET /api/v1/app/auth/profile). */
@Injectable()
export class ProfileLinkedIdentities implements LinkedIdentitiesSource {
  constructor(private readonly identities: MemberIdentitiesRepository) {}

  async listForMember(memberId: string): Promise<LinkedIdentity[]> {
    return (await this.identities.listByMember(memberId)).map(linkedIdentity);
  }

  async memberWithIdentities(memberId: string): Promise<MemberWithIdentities | null> {
    const found = await this.identities.memberWithIdentities(memberId);
    return found && { member: found.member, identities: found.identities.map(linkedIdentity) };
  }
}
