import { Global, Module } from '@nestjs/common';
import { LINKED_IDENTITIES } from '../members/linked-identities';
import { MembersModule } from '../members/members.module';
import { MemberIdentitiesRepository } from './member-identities.repository';
import { MemberIdentitiesService } from './member-identities.service';
import { ProfileLinkedIdentities } from './profile-linked-identities';

/**
 * Third-party identities linked to members (the endpoints are oauth/'s MemberIdentitiesController).
 * Global so the profile (auth feature) can list identities without importing the OAuth feature.
 */
@Global()
@Module({
  imports: [MembersModule],
  providers: [
    MemberIdentitiesRepository,
    MemberIdentitiesService,
    ProfileLinkedIdentities,
    { provide: LINKED_IDENTITIES, useExisting: ProfileLinkedIdentities },
  ],
  exports: [MemberIdentitiesService, LINKED_IDENTITIES],
})
export class IdentitiesModule {}
