import type { Member } from './member.entity';

/** A third-party identity linked to a member (filled by the OAuth/WeChat feature). */
export interface LinkedIdentity {
  provider: string;
  openId?: string | null;
  nickname?: string | null;
  avatarUrl?: string | null;
  linkedTime?: Date | string | null;
}

/** Optional provider: the OAuth feature registers one under this token to list a member's identities in the profile. */
export const LINKED_IDENTITIES = Symbol('LINKED_IDENTITIES');

export interface MemberWithIdentities {
  member: Member;
  identities: LinkedIdentity[];
}

export interface LinkedIdentitiesSource {
  listForMember(memberId: string): Promise<LinkedIdentity[]>;
  /** The member row and its identities read together (one query), or null for an unknown member. */
  memberWithIdentities?(memberId: string): Promise<MemberWithIdentities | null>;
}
