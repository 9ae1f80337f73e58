import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Prefix search of the members admin list (admin-members/admin-members.repository.ts): `lower(x) LIKE 'q%'`
 * uses a text_pattern_ops index whatever the database collation, where the unique lower() indexes do not.
 */
export class MemberSearchIndexes1796400000000 implements MigrationInterface {
  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE INDEX idx_members_username_search ON members (lower(username) text_pattern_ops)`);
    await q.query(
      `CREATE INDEX idx_members_email_search ON members (lower(email) text_pattern_ops) WHERE email IS NOT NULL`,
    );
    await q.query(`CREATE INDEX idx_members_phone_search ON members (phone text_pattern_ops) WHERE phone IS NOT NULL`);
    await q.query(
      `CREATE INDEX idx_members_nickname_search ON members (lower(nickname) text_pattern_ops) WHERE nickname IS NOT NULL`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    for (const name of ['username', 'email', 'phone', 'nickname'])
      await q.query(`DROP INDEX IF EXISTS idx_members_${name}_search`);
  }
}
