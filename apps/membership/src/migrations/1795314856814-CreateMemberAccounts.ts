import { MigrationInterface, QueryRunner } from 'typeorm';

/** Members, their sessions and refresh chains, verification codes, uploaded files, site settings. */
export class CreateMemberAccounts1795314856814 implements MigrationInterface {
  name = 'CreateMemberAccounts1795314856814';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE EXTENSION IF NOT EXISTS pgcrypto`);
    await q.query(`
      CREATE TABLE members (
        id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        username varchar(32) NOT NULL,
        email varchar(254),
        phone varchar(32),
        password_hash text,
        nickname varchar(64),
        avatar_url varchar(1024),
        gender varchar(8) CHECK (gender IN ('male', 'female', 'other')),
        birth_date date,
        status varchar(16) NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'disabled')),
        member_level int NOT NULL DEFAULT 0,
        points int NOT NULL DEFAULT 0,
        roles text[] NOT NULL DEFAULT '{}',
        created_time timestamptz NOT NULL DEFAULT now(),
        updated_time timestamptz NOT NULL DEFAULT now(),
        last_login_time timestamptz
      )`);
    await q.query(`CREATE UNIQUE INDEX uq_members_username ON members (lower(username))`);
    await q.query(`CREATE UNIQUE INDEX uq_members_email ON members (lower(email)) WHERE email IS NOT NULL`);
    await q.query(`CREATE UNIQUE INDEX uq_members_phone ON members (phone) WHERE phone IS NOT NULL`);

    await q.query(`
      CREATE TABLE member_sessions (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        member_id bigint NOT NULL REFERENCES members(id) ON DELETE CASCADE,
        login_type varchar(32) NOT NULL,
        device_name varchar(128) NOT NULL,
        ip varchar(64),
        created_time timestamptz NOT NULL DEFAULT now(),
        last_active_time timestamptz NOT NULL DEFAULT now(),
        expires_time timestamptz NOT NULL,
        revoked_time timestamptz,
        revoked_reason varchar(32)
      )`);
    await q.query(`CREATE INDEX idx_member_sessions_member ON member_sessions (member_id)`);

    await q.query(`
      CREATE TABLE member_refresh_tokens (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        session_id uuid NOT NULL REFERENCES member_sessions(id) ON DELETE CASCADE,
        token_hash char(64) NOT NULL UNIQUE,
        created_time timestamptz NOT NULL DEFAULT now(),
        expires_time timestamptz NOT NULL,
        used_time timestamptz,
        successor_sealed text
      )`);
    await q.query(`CREATE INDEX idx_member_refresh_tokens_session ON member_refresh_tokens (session_id)`);

    await q.query(`
      CREATE TABLE verification_codes (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        channel varchar(8) NOT NULL CHECK (channel IN ('sms', 'email')),
        target varchar(254) NOT NULL,
        code_hash char(64) NOT NULL,
        attempts int NOT NULL DEFAULT 0,
        max_attempts int NOT NULL,
        expires_time timestamptz NOT NULL,
        consumed_time timestamptz,
        ip varchar(64),
        created_time timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX idx_verification_codes_target ON verification_codes (channel, target, created_time)`);

    await q.query(`
      CREATE TABLE member_files (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        member_id bigint NOT NULL REFERENCES members(id) ON DELETE CASCADE,
        filename varchar(128) NOT NULL UNIQUE,
        original_filename varchar(255) NOT NULL,
        size int NOT NULL,
        content_type varchar(128) NOT NULL,
        ext varchar(16) NOT NULL,
        sha256 char(64) NOT NULL,
        storage varchar(16) NOT NULL,
        created_time timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX idx_member_files_member ON member_files (member_id)`);

    await q.query(`
      CREATE TABLE site_settings (
        key varchar(100) PRIMARY KEY,
        value text NOT NULL,
        updated_time timestamptz NOT NULL DEFAULT now(),
        updated_by bigint
      )`);
    await q.query(`
      INSERT INTO site_settings (key, value) VALUES
        ('site.name', 'Membership'), ('site.logo', ''), ('site.favicon', ''), ('site.description', ''),
        ('seo.title_template', '%s - Membership'), ('seo.keywords', ''),
        ('footer.copyright', ''), ('footer.icp', '')`);
  }

  async down(q: QueryRunner): Promise<void> {
    for (const t of [
      'site_settings',
      'member_files',
      'verification_codes',
      'member_refresh_tokens',
      'member_sessions',
      'members',
    ]) {
      await q.query(`DROP TABLE IF EXISTS ${t}`);
    }
  }
}
