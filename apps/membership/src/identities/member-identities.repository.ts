import { Injectable } from '@nestjs/common';
import { DataSource, Repository } from 'typeorm';
import { MemberIdentity } from './member-identity.entity';
import { selectEntities } from '../members/raw-rows';

/** The only place that reads or writes member_identities. */
@Injectable()
export class MemberIdentitiesRepository {
  private readonly repo: Repository<MemberIdentity>;

  constructor(dataSource: DataSource) {
    this.repo = dataSource.getRepository(MemberIdentity);
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
  async insertOrGet(values: Partial<MemberIdentity> & { provider: string; subject: string }): Promise<{ identity: MemberIdentity; created: boolean }> {
    const inserted = await this.repo
      .createQueryBuilder()
      .insert()
      .into(MemberIdentity)
      .values(values)
      .orIgnore()
      .returning('*')
      .execute();
    if (inserted.raw?.length) return { identity: (await this.findBySubject(values.provider, values.subject))!, created: true };
    return { identity: (await this.findBySubject(values.provider, values.subject))!, created: false };
  }

  async touch(id: string, changes: { unionId?: string | null; nickname?: string | null; avatarUrl?: string | null; registrationId: string }): Promise<void> {
    const values: Partial<MemberIdentity> = { lastLoginTime: new Date(), registrationId: changes.registrationId };
    if (changes.unionId) values.unionId = changes.unionId;
    if (changes.nickname) values.nickname = changes.nickname.slice(0, 128);
    if (changes.avatarUrl) values.avatarUrl = changes.avatarUrl.slice(0, 1024);
    await this.repo.update({ id }, values);
  }

  async deleteOwned(id: string, memberId: string): Promise<boolean> {
    const res = await this.repo.delete({ id, memberId });
    return (res.affected ?? 0) > 0;
  }
}
