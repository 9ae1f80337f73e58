import { Injectable } from '@nestjs/common';
import { DataSource, Repository } from 'typeorm';
import { Member } from './member.entity';
import { selectEntities } from './raw-rows';

/** The only place that reads or writes the members table. */
@Injectable()
export class MembersRepository {
  private readonly repo: Repository<Member>;

  constructor(dataSource: DataSource) {
    this.repo = dataSource.getRepository(Member);
  }

  findById(id: string): Promise<Member | null> {
    if (!/^\d{1,19}$/.test(id)) return Promise.resolve(null);
    return selectEntities(this.repo, 'id = $1', [id]).then((rows) => rows[0] ?? null);
  }

  findByUsername(username: string): Promise<Member | null> {
    return this.repo.createQueryBuilder('m').where('lower(m.username) = lower(:username)', { username }).getOne();
  }

  findByEmail(email: string): Promise<Member | null> {
    return this.repo.createQueryBuilder('m').where('lower(m.email) = lower(:email)', { email }).getOne();
  }

  findByPhone(phone: string): Promise<Member | null> {
    return this.repo.findOne({ where: { phone } });
  }

  /** Inserts; a unique violation surfaces as a `QueryFailedError` with code 23505 and the index name. */
  insert(values: Partial<Member>): Promise<Member> {
    return this.repo.save(this.repo.create(values));
  }

  async update(id: string, values: Partial<Member>): Promise<void> {
    await this.repo.update({ id }, values);
  }

  async setPasswordHash(id: string, passwordHash: string): Promise<void> {
    await this.repo.update({ id }, { passwordHash });
  }

  async touchLogin(id: string): Promise<void> {
    await this.repo.update({ id }, { lastLoginTime: () => 'now()' } as never);
  }

  /** Adds a role once (no duplicates). */
  async addRole(id: string, role: string): Promise<void> {
    await this.repo.query(`UPDATE members SET roles = array_append(roles, $2::text) WHERE id = $1 AND NOT ($2::text = ANY(roles))`, [id, role]);
  }
}
