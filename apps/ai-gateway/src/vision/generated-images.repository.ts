// The generated images kept at a URL and each key's stored bytes (migration 1797030000000-GeneratedImages). A call
// holds its images' largest size before the upstream is called (a row without a storage key), and swaps the hold
// for a row per stored image; the bound AI_IMAGES_MAX_BYTES_PER_KEY is checked on the key's usage row, locked by
// the statement that raises it, so replicas cannot pass it together.
import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { returnedRows } from '@app/database';

export interface GeneratedImageRow {
  id: string;
  storage_key: string | null;
  /** created_at as text: a Date would drop its microseconds and start the next keyset page early. */
  at: string;
}

export interface KeptImage {
  id: string;
  storageKey: string;
  bytes: number;
}

/** What a refused call is told: the key's stored bytes and when its oldest image was stored. */
export interface ImageUsage {
  used: number;
  oldest: Date | null;
}

/** Rolls back a swap that would take the key past its bound (images larger than their hold). */
class OverBound extends Error {}

/** Raises the key's stored bytes by $2 (may be negative) unless that takes them past $3; the row is locked. */
const RAISE_USAGE = `INSERT INTO ai_generated_image_usage AS u (key_id, bytes) SELECT $1::uuid, greatest($2::bigint, 0) WHERE $2::bigint <= $3::bigint
   ON CONFLICT (key_id) DO UPDATE SET bytes = greatest(u.bytes + $2::bigint, 0) WHERE $2::bigint <= 0 OR u.bytes + $2::bigint <= $3::bigint
   RETURNING key_id`;

@Injectable()
export class GeneratedImagesRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /**
   * Holds `bytes` for a call of `keyId` (a row without a storage key, stored at `at`) when its stored bytes
   * stay within `max`, in one statement; false when it would pass `max` (nothing written).
   */
  async hold(id: string, keyId: string, bytes: number, max: number, at: Date): Promise<boolean> {
    const rows: unknown[] = await this.db.query(
      `WITH u AS (${RAISE_USAGE})
       INSERT INTO ai_generated_images (id, key_id, storage_key, bytes, created_at) SELECT $4::uuid, key_id, NULL, $2::bigint, $5 FROM u
       RETURNING id`,
      [keyId, bytes, max, id, at],
    );
    return rows.length === 1;
  }

  async usage(keyId: string): Promise<ImageUsage> {
    const [row]: Array<{ used: string | null; oldest: Date | null }> = await this.db.query(
      `SELECT (SELECT bytes FROM ai_generated_image_usage WHERE key_id = $1)::text AS used,
              (SELECT min(created_at) FROM ai_generated_images WHERE key_id = $1) AS oldest`,
      [keyId],
    );
    return { used: Number(row?.used ?? 0), oldest: row?.oldest ?? null };
  }

  /**
   * Swaps the hold `holdId` for a row per image (stored at `at`), in one transaction: the key's bytes go down by
   * the hold and up by the images. False, with nothing changed, when images larger than their hold would take the
   * key past `max`. A hold already swept (a call that outlived the retention) releases nothing.
   */
  async keep(holdId: string, keyId: string, images: KeptImage[], max: number, at: Date): Promise<boolean> {
    try {
      await this.db.transaction(async (m) => {
        const released = returnedRows<{ bytes: string }>(
          await m.query(`DELETE FROM ai_generated_images WHERE id = $1 AND storage_key IS NULL RETURNING bytes`, [
            holdId,
          ]),
        );
        await m.query(
          `INSERT INTO ai_generated_images (id, key_id, storage_key, bytes, created_at)
           SELECT x.id, $1::uuid, x.storage_key, x.bytes, $5 FROM unnest($2::uuid[], $3::varchar[], $4::bigint[]) AS x(id, storage_key, bytes)`,
          [keyId, images.map((i) => i.id), images.map((i) => i.storageKey), images.map((i) => i.bytes), at],
        );
        const delta = images.reduce((sum, i) => sum + i.bytes, 0) - Number(released[0]?.bytes ?? 0);
        const raised: unknown[] = await m.query(RAISE_USAGE, [keyId, delta, max]);
        if (raised.length === 0) throw new OverBound();
      });
      return true;
    } catch (e) {
      if (e instanceof OverBound) return false;
      throw e;
    }
  }

  /**
   * Up to `limit` rows stored before `cutoff`, oldest first, after the row `after` (keyset order created_at, id):
   * rows whose objects could not be deleted are passed over, not read again by the same sweep.
   */
  async expired(cutoff: Date, after: GeneratedImageRow | null, limit: number): Promise<GeneratedImageRow[]> {
    return this.db.query(
      `SELECT id, storage_key, created_at::text AS at FROM ai_generated_images
        WHERE created_at < $1 AND ($2::timestamptz IS NULL OR (created_at, id) > ($2::timestamptz, $3::uuid))
        ORDER BY created_at, id LIMIT $4`,
      [cutoff, after?.at ?? null, after?.id ?? null, limit],
    );
  }

  /**
   * Deletes the rows `ids` and lowers their keys' stored bytes by theirs; answers how many went. Idempotent: a row
   * another replica deleted first is not counted twice. One forget at a time (a transaction-scoped advisory lock),
   * so two sweeps never lock the same keys' usage rows in different orders.
   */
  async forget(ids: string[]): Promise<number> {
    if (ids.length === 0) return 0;
    return this.db.transaction(async (m) => {
      await m.query(`SELECT pg_advisory_xact_lock(hashtext('ai_generated_images_forget'))`);
      const [row] = returnedRows<{ deleted: number }>(
        await m.query(
          `WITH gone AS (DELETE FROM ai_generated_images WHERE id = ANY($1::uuid[]) RETURNING key_id, bytes),
                per_key AS (SELECT key_id, sum(bytes) AS bytes FROM gone GROUP BY key_id),
                lowered AS (UPDATE ai_generated_image_usage u SET bytes = greatest(u.bytes - p.bytes, 0)
                              FROM per_key p WHERE u.key_id = p.key_id RETURNING 1)
           SELECT (SELECT count(*) FROM gone)::int AS deleted`,
          [ids],
        ),
      );
      return row.deleted;
    });
  }
}
