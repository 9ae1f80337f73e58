import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Bytes each member keeps uploaded (UPLOAD_MAX_BYTES_PER_MEMBER): one row per member, raised in the
 * transaction that records an upload (refused past the quota), so the check is one indexed row, not a
 * sum over the member's files. Backfilled from the files already recorded.
 */
export class MemberFileQuota1795800000000 implements MigrationInterface {
  name = 'MemberFileQuota1795800000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE member_file_usage (
        member_id bigint PRIMARY KEY REFERENCES members(id) ON DELETE CASCADE,
        bytes bigint NOT NULL CHECK (bytes >= 0)
      )`);
    await q.query(
      `INSERT INTO member_file_usage (member_id, bytes) SELECT member_id, sum(size) FROM member_files GROUP BY member_id`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE member_file_usage`);
  }
}
