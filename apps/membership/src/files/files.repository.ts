import { Injectable } from '@nestjs/common';
import { DataSource, Repository } from 'typeorm';
import { MemberFile } from './member-file.entity';

/** Rolls back an upload record that would take its member past the quota. */
class OverQuota extends Error {}

/** The only place that reads or writes uploaded-file records. */
@Injectable()
export class FilesRepository {
  private readonly repo: Repository<MemberFile>;

  constructor(private readonly db: DataSource) {
    this.repo = db.getRepository(MemberFile);
  }

  /** Bytes charged for the files the member keeps (each at least UPLOAD_MIN_CHARGED_BYTES; 0 before the first upload). */
  async usedBytes(memberId: string): Promise<number> {
    const rows: Array<{ bytes: string }> = await this.db.query(
      `SELECT bytes FROM member_file_usage WHERE member_id = $1`,
      [memberId],
    );
    return rows.length ? Number(rows[0].bytes) : 0;
  }

  /**
   * Records the file and adds its `charge` (its size, or the floor a small file counts as) to the member's
   * total in one transaction, only while the total stays within `quota` (null, nothing recorded,
   * otherwise). The total's row lock is taken last, so it is held for the commit only; concurrent uploads
   * of one member cannot pass the quota together.
   */
  async insertWithinQuota(
    file: Partial<MemberFile> & { memberId: string },
    { quota, charge }: { quota: number; charge: number },
  ): Promise<MemberFile | null> {
    return this.db
      .transaction(async (m) => {
        const saved = await m.getRepository(MemberFile).save(m.getRepository(MemberFile).create(file));
        const counted: unknown[] = await m.query(
          `INSERT INTO member_file_usage AS u (member_id, bytes) SELECT $1::bigint, $2::bigint WHERE $2::bigint <= $3::bigint
           ON CONFLICT (member_id) DO UPDATE SET bytes = u.bytes + EXCLUDED.bytes WHERE u.bytes + EXCLUDED.bytes <= $3::bigint
           RETURNING 1`,
          [file.memberId, charge, quota],
        );
        if (counted.length === 0) throw new OverQuota();
        return saved;
      })
      .catch((e: unknown) => {
        if (e instanceof OverQuota) return null;
        throw e;
      });
  }

  findByFilename(filename: string): Promise<MemberFile | null> {
    return this.repo.findOne({ where: { filename } });
  }
}
