import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A member's email and phone become either an unproven claim (verified time NULL) or a verified
 * address (proven with a code). Existing rows: a phone on a member without a password can only have
 * come from a phone-code sign-up, so it is marked verified at the member's creation time; every other
 * existing email and phone stays an unproven claim (registration never asked for a code).
 */
export class MemberContactProof1795600000000 implements MigrationInterface {
  name = 'MemberContactProof1795600000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(
      `ALTER TABLE members ADD COLUMN email_verified_time timestamptz, ADD COLUMN phone_verified_time timestamptz`,
    );
    await q.query(
      `UPDATE members SET phone_verified_time = created_time WHERE phone IS NOT NULL AND password_hash IS NULL`,
    );
    // A verified time without its address would be meaningless.
    await q.query(
      `ALTER TABLE members ADD CONSTRAINT ck_members_email_verified CHECK (email_verified_time IS NULL OR email IS NOT NULL)`,
    );
    await q.query(
      `ALTER TABLE members ADD CONSTRAINT ck_members_phone_verified CHECK (phone_verified_time IS NULL OR phone IS NOT NULL)`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(
      `ALTER TABLE members DROP CONSTRAINT ck_members_phone_verified, DROP CONSTRAINT ck_members_email_verified`,
    );
    await q.query(`ALTER TABLE members DROP COLUMN phone_verified_time, DROP COLUMN email_verified_time`);
  }
}
