import { MigrationInterface, QueryRunner } from 'typeorm';

/** External identities (OAuth 2.0, OIDC, WeChat) linked to members. */
export class CreateMemberIdentities1795400000000 implements MigrationInterface {
  name = 'CreateMemberIdentities1795400000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE member_identities (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        member_id bigint NOT NULL REFERENCES members(id) ON DELETE CASCADE,
        provider varchar(255) NOT NULL,
        subject varchar(255) NOT NULL,
        registration_id varchar(64) NOT NULL,
        union_id varchar(128),
        nickname varchar(128),
        avatar_url varchar(1024),
        created_time timestamptz NOT NULL DEFAULT now(),
        last_login_time timestamptz
      )`);
    await q.query(`CREATE UNIQUE INDEX uq_member_identities_subject ON member_identities (provider, subject)`);
    await q.query(`CREATE INDEX idx_member_identities_member ON member_identities (member_id)`);
    await q.query(
      `CREATE INDEX idx_member_identities_union ON member_identities (union_id) WHERE union_id IS NOT NULL`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE member_identities`);
  }
}
