import { Global, Injectable, Module } from '@nestjs/common';
import { LINKED_IDENTITIES, LinkedIdentitiesSource, LinkedIdentity } from '../members/linked-identities';
import { MemberIdentitiesRepository } from './member-identities.repository';

/** Lists a member's linked identities for the profile (GET /api/v1/app/auth/profile). */
@Injectable()
export class ProfileLinkedIdentities implements LinkedIdentitiesSource {
  constructor(private readonly identities: MemberIdentitiesRepository) {}

  async listForMember(memberId: string): Promise<LinkedIdentity[]> {
    return (await this.identities.listByMember(memberId)).map((i) => ({
      provider: i.registrationId,
      openId: i.subject,
      nickname: i.nickname,
      avatarUrl: i.avatarUrl,
      linkedTime: i.createdTime,
    }));
  }
}

/** Global so the profile (auth feature) can list identities without importing the OAuth feature. */
@Global()
@Module({
  providers: [MemberIdentitiesRepository, ProfileLinkedIdentities, { provide: LINKED_IDENTITIES, useExisting: ProfileLinkedIdentities }],
  exports: [MemberIdentitiesRepository, LINKED_IDENTITIES],
})
export class IdentitiesModule {}
