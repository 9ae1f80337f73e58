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

export interface LinkedIdentitiesSource {
  listForMember(memberId: string): Promise<LinkedIdentity[]>;
}
