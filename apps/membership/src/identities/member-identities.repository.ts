import { Injectable } from '@nestjs/common';
import { DataSource, Repository } from 'typeorm';
import { Member } from '../members/member.entity';
import { hydrateEntity, preparedRows, selectEntities } from '../members/raw-rows';
import { keptAvatarUrl, MemberIdentity } from './member-identity.entity';

/** What the profile shows of a linked identity. */
export interface IdentitySummary {
  registrationId: string;
  subject: string;
  nickname: string | null;
  avatarUrl: string | null;
  createdTime: Date | string;
}

// The profile read: the member row (every column but the password hash) and its identities, oldest
// first, in one round trip. The identities come back as one JSON array [[registration_id, subject,
// nickname, avatar_url, created_time], ...].
const MEMBER_WITH_IDENTITIES = `SELECT m.id, m.username, m.email, m.phone, m.nickname, m.avatar_url, m.gender, m.birth_date, m.status,
  m.member_level, m.points, m.roles, m.created_time, m.updated_time, m.last_login_time,
  (SELECT coalesce(json_agg(json_build_array(i.registration_id, i.subject, i.nickname, i.avatar_url, i.created_time) ORDER BY i.created_time, i.id), '[]'::json)
     FROM member_identities i WHERE i.member_id = m.id) AS linked_identities
FROM members m WHERE m.id = $1`;

/** The only place that reads or writes member_identities. */
@Injectable()
export class MemberIdentitiesRepository {
  private readonly repo: Repository<MemberIdentity>;

  private readonly members: Repository<Member>;

  constructor(private readonly dataSource: DataSource) {
    this.repo = dataSource.getRepository(MemberIdentity);
    this.members = dataSource.getRepository(Member);
  }

  /**
   * The member (without its password hash) and its identities, oldest first, with one query; null for
   * an unknown id. The profile reads both on every call: one round trip instead of two.
   */
  async memberWithIdentities(memberId: string): Promise<{ member: Member; identities: IdentitySummary[] } | null> {
    if (!/^\d{1,19}$/.test(memberId)) return null;
    const [row] = await preparedRows(this.dataSource, 'membership.member_with_identities', MEMBER_WITH_IDENTITIES, [
      memberId,
    ]);
    if (!row) return null;
    const linked = row.linked_identities as Array<[string, string, string | null, string | null, string]>;
    return {
      member: hydrateEntity(this.members, row),
      identities: linked.map(([registrationId, subject, nickname, avatarUrl, createdTime]) => ({
        registrationId,
        subject,
        nickname,
        avatarUrl,
        createdTime,
      })),
    };
  }

  findBySubject(provider: string, subject: string): Promise<MemberIdentity | null> {
    return this.repo.findOne({ where: { provider, subject } });
  }

  /** Any identity carrying this WeChat unionid (the oldest link decides the member). */
  findByUnionId(unionId: string): Promise<MemberIdentity | null> {
    return this.repo.findOne({ where: { unionId }, order: { createdTime: 'ASC' } });
  }

  listByMember(memberId: string): Promise<MemberIdentity[]> {
    return selectEntities(this.repo, 'member_id = $1', [memberId], 'created_time ASC, id ASC');
  }

  countByMember(memberId: string): Promise<number> {
    return this.repo.count({ where: { memberId } });
  }

  findOwned(id: string, memberId: string): Promise<MemberIdentity | null> {
    if (!/^[0-9a-f-]{36}$/i.test(id)) return Promise.resolve(null);
    return this.repo.findOne({ where: { id, memberId } });
  }

  /** Inserts unless (provider, subject) exists; returns the row that won. */
  async insertOrGet(
    values: Partial<MemberIdentity> & { provider: string; subject: string },
  ): Promise<{ identity: MemberIdentity; created: boolean }> {
    const inserted = await this.repo
      .createQueryBuilder()
      .insert()
      .into(MemberIdentity)
      .values(values)
      .orIgnore()
      .returning('*')
      .execute();
    const raw: unknown = inserted.raw;
    if (Array.isArray(raw) && raw.length)
      return { identity: (await this.findBySubject(values.provider, values.subject))!, created: true };
    return { identity: (await this.findBySubject(values.provider, values.subject))!, created: false };
  }

  async touch(
    id: string,
    changes: { unionId?: string | null; nickname?: string | null; avatarUrl?: string | null; registrationId: string },
  ): Promise<void> {
    const values: Partial<MemberIdentity> = { lastLoginTime: new Date(), registrationId: changes.registrationId };
    if (changes.unionId) values.unionId = changes.unionId;
    if (changes.nickname) values.nickname = changes.nickname.slice(0, 128);
    // One too long for the column is not kept; the last one that fitted stays.
    const avatarUrl = keptAvatarUrl(changes.avatarUrl);
    if (avatarUrl) values.avatarUrl = avatarUrl;
    await this.repo.update({ id }, values);
  }

  async deleteOwned(id: string, memberId: string): Promise<boolean> {
    const res = await this.repo.delete({ id, memberId });
    return (res.affected ?? 0) > 0;
  }
}
