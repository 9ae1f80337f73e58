import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager, Repository } from 'typeorm';
import { Member } from './member.entity';
import { selectEntities } from './raw-rows';

export type ContactChannel = 'email' | 'phone';

/** The only place that reads or writes the members table. */
@Injectable()
export class MembersRepository {
  private readonly repo: Repository<Member>;

  constructor(private readonly dataSource: DataSource) {
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

  /**
   * Inserts, and runs `created` (the member.registered event, an audit row) in the same transaction, so
   * the event exists exactly when the member does. A unique violation surfaces as a `QueryFailedError`
   * with code 23505 and the index name.
   */
  insert(values: Partial<Member>, created: (m: EntityManager, member: Member) => Promise<void>): Promise<Member> {
    return this.dataSource.transaction(async (m) => {
      const member = await m.save(m.create(Member, values));
      await created(m, member);
      return member;
    });
  }

  async update(id: string, values: Partial<Member>): Promise<void> {
    await this.repo.update({ id }, values);
  }

  /**
   * Removes the unproven claim on an address from whichever member holds it (a proven owner takes it
   * back); a verified holder is left alone. The ids of the members it was removed from.
   */
  async releaseUnprovenClaim(channel: ContactChannel, address: string, memberId?: string): Promise<string[]> {
    const [col, verified, match] =
      channel === 'email'
        ? ['email', 'email_verified_time', 'lower(email) = lower($1)']
        : ['phone', 'phone_verified_time', 'phone = $1'];
    const rows: { id: string }[] = await this.repo
      .query(
        `UPDATE members SET ${col} = NULL, updated_time = now() WHERE ${match} AND ${verified} IS NULL ${memberId ? 'AND id = $2' : ''} RETURNING id`,
        memberId ? [address, memberId] : [address],
      )
      .then((r: unknown[]) => (Array.isArray(r[0]) ? (r[0] as { id: string }[]) : (r as { id: string }[])));
    return rows.map((r) => String(r.id));
  }

  /** Stores a proven address on the member (unique indexes refuse it while another member holds it). */
  async setVerifiedContact(id: string, channel: ContactChannel, address: string): Promise<void> {
    const values =
      channel === 'email'
        ? { email: address, emailVerifiedTime: new Date() }
        : { phone: address, phoneVerifiedTime: new Date() };
    await this.repo.update({ id }, values);
  }

  /**
   * Stores a new password hash. With `expected` (the hash the caller verified, null for "none yet") only
   * while that is still the stored one: false when a reset or change replaced it meanwhile.
   */
  async setPasswordHash(id: string, passwordHash: string, expected?: string | null): Promise<boolean> {
    if (expected === undefined) {
      await this.repo.update({ id }, { passwordHash });
      return true;
    }
    const res = await this.repo.query<unknown[]>(
      `UPDATE members SET password_hash = $2, updated_time = now() WHERE id = $1 AND password_hash IS NOT DISTINCT FROM $3 RETURNING id`,
      [id, passwordHash, expected],
    );
    return (Array.isArray(res[0]) ? res[0] : res).length > 0;
  }

  /** Sets a new password hash and runs `changed` (its audit row) in the same transaction. */
  async setPasswordHashRecorded(
    id: string,
    passwordHash: string,
    changed: (m: EntityManager) => Promise<void>,
  ): Promise<void> {
    await this.dataSource.transaction(async (m) => {
      await m.query(`UPDATE members SET password_hash = $2, updated_time = now() WHERE id = $1`, [id, passwordHash]);
      await changed(m);
    });
  }

  async touchLogin(id: string): Promise<void> {
    await this.repo.update({ id }, { lastLoginTime: () => 'now()' });
  }

  /** Adds a role once (no duplicates). */
  async addRole(id: string, role: string): Promise<void> {
    await this.repo.query(
      `UPDATE members SET roles = array_append(roles, $2::text) WHERE id = $1 AND NOT ($2::text = ANY(roles))`,
      [id, role],
    );
  }
}
