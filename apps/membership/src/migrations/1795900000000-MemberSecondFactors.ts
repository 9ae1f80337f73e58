import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Second factors: the authenticator-app secret (encrypted, with the last accepted time step so a code
 * is used once across replicas), hashed recovery codes, passkeys (public keys), and on each session
 * how it was authenticated (`amr`) and when and how strongly a second factor was last shown (step-up).
 */
export class MemberSecondFactors1795900000000 implements MigrationInterface {
  name = 'MemberSecondFactors1795900000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE member_totp (
        member_id bigint PRIMARY KEY REFERENCES members(id) ON DELETE CASCADE,
        secret_sealed text NOT NULL,
        confirmed_time timestamptz,
        last_step bigint NOT NULL DEFAULT -1,
        created_time timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`
      CREATE TABLE member_recovery_codes (
        id bigserial PRIMARY KEY,
        member_id bigint NOT NULL REFERENCES members(id) ON DELETE CASCADE,
        code_hash varchar(64) NOT NULL,
        used_time timestamptz,
        created_time timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX idx_member_recovery_codes_member ON member_recovery_codes (member_id)`);
    await q.query(`
      CREATE TABLE member_passkeys (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        member_id bigint NOT NULL REFERENCES members(id) ON DELETE CASCADE,
        credential_id varchar(1366) NOT NULL UNIQUE,
        public_key bytea NOT NULL,
        sign_count bigint NOT NULL DEFAULT 0,
        transports text[] NOT NULL DEFAULT '{}',
        device_type varchar(16) NOT NULL,
        backed_up boolean NOT NULL,
        name varchar(64) NOT NULL,
        created_time timestamptz NOT NULL DEFAULT now(),
        last_used_time timestamptz
      )`);
    await q.query(`CREATE INDEX idx_member_passkeys_member ON member_passkeys (member_id)`);
    await q.query(`ALTER TABLE member_sessions ADD COLUMN amr text[] NOT NULL DEFAULT '{}'`);
    await q.query(`ALTER TABLE member_sessions ADD COLUMN factor_time timestamptz`);
    await q.query(`ALTER TABLE member_sessions ADD COLUMN factor_strength smallint NOT NULL DEFAULT 0`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE member_sessions DROP COLUMN factor_strength, DROP COLUMN factor_time, DROP COLUMN amr`);
    await q.query(`DROP TABLE member_passkeys`);
    await q.query(`DROP TABLE member_recovery_codes`);
    await q.query(`DROP TABLE member_totp`);
  }
}
