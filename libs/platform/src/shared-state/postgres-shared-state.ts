import { OnModuleDestroy } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { withoutStatementTimeout } from '@app/database';
import { distinctEntries, HitAnswer, SharedState } from './shared-state';

/** SharedState on the `shared_state` table; expired rows are ignored and swept once a minute. */
export class PostgresSharedState extends SharedState implements OnModuleDestroy {
  readonly backend = 'postgres' as const;
  private readonly sweeper: NodeJS.Timeout;

  constructor(private readonly db: DataSource) {
    super();
    this.sweeper = setInterval(() => {
      // Not cut by DATABASE_STATEMENT_TIMEOUT_MS: a backlog would be cut on every pass.
      withoutStatementTimeout(this.db, (m) => m.query('DELETE FROM shared_state WHERE expires_at < now()')).catch(
        () => undefined,
      );
    }, 60_000);
    this.sweeper.unref();
  }

  onModuleDestroy(): void {
    clearInterval(this.sweeper);
  }

  async get(key: string): Promise<string | null> {
    const rows = await this.db.query<{ value: string }[]>(
      'SELECT value FROM shared_state WHERE key = $1 AND expires_at > now()',
      [key],
    );
    return rows[0]?.value ?? null;
  }

  async set(key: string, value: string, ttlMs: number): Promise<void> {
    await this.db.query(
      `INSERT INTO shared_state (key, value, expires_at) VALUES ($1, $2, now() + $3 * interval '1 millisecond')
       ON CONFLICT (key) DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at`,
      [key, value, ttlMs],
    );
  }

  async getMany(keys: string[]): Promise<(string | null)[]> {
    if (!keys.length) return [];
    const rows = await this.db.query<{ key: string; value: string }[]>(
      'SELECT key, value FROM shared_state WHERE key = ANY($1::text[]) AND expires_at > now()',
      [keys],
    );
    const found = new Map(rows.map((r) => [r.key, r.value]));
    return keys.map((k) => found.get(k) ?? null);
  }

  async setManyWithin(
    budgetKey: string,
    maxBytes: number,
    entries: Array<[string, string]>,
    ttlMs: number,
  ): Promise<boolean> {
    const { entries: distinct, bytes } = distinctEntries(entries);
    if (!distinct.length) return true;
    // A batch larger than the whole bound can never fit: refused here, not shipped to be refused.
    if (bytes > maxBytes) return false;
    // One statement: the counter row is upserted (and locked) first, only while it stays within the
    // bound; the entries are written only when it was, with the counter's expiry. Concurrent writers
    // under one counter wait for its lock and see each other's bytes.
    const result = await this.db.query<unknown[]>(
      `WITH budget AS (
         INSERT INTO shared_state AS s (key, value, expires_at)
         SELECT $1, $2::bigint::text, now() + $4 * interval '1 millisecond' WHERE $2::bigint <= $3::bigint
         ON CONFLICT (key) DO UPDATE SET
           value = CASE WHEN s.expires_at <= now() THEN excluded.value ELSE (s.value::bigint + $2::bigint)::text END,
           expires_at = CASE WHEN s.expires_at <= now() THEN excluded.expires_at ELSE s.expires_at END
         WHERE s.expires_at <= now() OR s.value::bigint + $2::bigint <= $3::bigint
         RETURNING expires_at
       ), written AS (
         INSERT INTO shared_state AS s (key, value, expires_at)
         SELECT e.k, e.v, b.expires_at FROM unnest($5::text[], $6::text[]) AS e(k, v), budget b
         ON CONFLICT (key) DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at
         RETURNING 1
       )
       SELECT (SELECT count(*) FROM budget) AS stored`,
      [
        budgetKey,
        bytes,
        Math.max(0, Math.floor(maxBytes)),
        Math.max(1, Math.round(ttlMs)),
        distinct.map(([k]) => k),
        distinct.map(([, v]) => v),
      ],
    );
    return Number(rowsOf<{ stored: string }>(result)[0]?.stored ?? 0) > 0;
  }

  async setIfAbsent(key: string, value: string, ttlMs: number): Promise<boolean> {
    const rows = await this.db.query<unknown[]>(
      `INSERT INTO shared_state (key, value, expires_at) VALUES ($1, $2, now() + $3 * interval '1 millisecond')
       ON CONFLICT (key) DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at
       WHERE shared_state.expires_at <= now()
       RETURNING key`,
      [key, value, ttlMs],
    );
    return rows.length > 0;
  }

  async take(key: string): Promise<string | null> {
    // TypeORM answers DELETE ... RETURNING with [rows, affectedCount], not rows.
    const result = await this.db.query<unknown[]>(
      'DELETE FROM shared_state WHERE key = $1 RETURNING value, expires_at > now() AS live',
      [key],
    );
    const rows = rowsOf<{ value: string; live: boolean }>(result);
    return rows[0]?.live ? rows[0].value : null;
  }

  async del(key: string): Promise<void> {
    await this.db.query('DELETE FROM shared_state WHERE key = $1', [key]);
  }

  async incr(key: string, ttlMs: number, by = 1): Promise<{ count: number; ttlMs: number }> {
    const rows = await this.db.query<{ value: string; ttl: string }[]>(
      `INSERT INTO shared_state AS s (key, value, expires_at) VALUES ($1, $3::bigint::text, now() + $2 * interval '1 millisecond')
       ON CONFLICT (key) DO UPDATE SET
         value = CASE WHEN s.expires_at <= now() THEN excluded.value ELSE (s.value::bigint + $3::bigint)::text END,
         expires_at = CASE WHEN s.expires_at <= now() THEN excluded.expires_at ELSE s.expires_at END
       RETURNING value, GREATEST(0, EXTRACT(EPOCH FROM (expires_at - now())) * 1000)::bigint AS ttl`,
      [key, ttlMs, Math.round(by)],
    );
    return { count: Number(rows[0].value), ttlMs: Number(rows[0].ttl) };
  }

  async ttl(key: string): Promise<number> {
    const rows = await this.db.query<{ ttl: string }[]>(
      `SELECT GREATEST(0, EXTRACT(EPOCH FROM (expires_at - now())) * 1000)::bigint AS ttl FROM shared_state WHERE key = $1 AND expires_at > now()`,
      [key],
    );
    return rows[0] ? Number(rows[0].ttl) : 0;
  }

  /**
   * The block check and count of `key` in one statement (hitMany). Hits asked while one is on its way to the
   * database go together in the next statement: a flood of refused credentials from many addresses is a
   * statement per batch, not per request, each hit still counted exactly and answered its own count.
   */
  override hit(key: string, blockKey: string, ttlMs: number): Promise<HitAnswer> {
    return new Promise<HitAnswer>((resolve, reject) => {
      this.pendingHits.push({ key, blockKey, ttlMs, resolve, reject });
      if (!this.hitting) void this.sendHits();
    });
  }

  private readonly pendingHits: PendingHit[] = [];
  private hitting = false;

  /** Sends the waiting hits, at most MAX_HITS_PER_STATEMENT a statement, one statement at a time. */
  private async sendHits(): Promise<void> {
    this.hitting = true;
    try {
      while (this.pendingHits.length) {
        const batch = this.pendingHits.splice(0, MAX_HITS_PER_STATEMENT);
        try {
          const answers = await this.hitMany(batch);
          batch.forEach((h, i) => h.resolve(answers[i]));
        } catch (e) {
          for (const h of batch) h.reject(e);
        }
      }
    } finally {
      this.hitting = false;
    }
  }

  /**
   * One or several hits in one statement, each as if alone, in the order they came: hits of one key are counted
   * together (its count goes up by their number; each is answered the count after itself; a new window
   * lives as long as its first hit asked), a blocked hit is not counted. Keys are written in key order (concurrent statements lock rows in one order).
   */
  private async hitMany(batch: PendingHit[]): Promise<HitAnswer[]> {
    const result = await this.db.query<unknown[]>(
      `WITH input AS (
         SELECT t.key, t.block_key, t.ttl, t.ord
         FROM unnest($1::text[], $2::text[], $3::bigint[]) WITH ORDINALITY AS t(key, block_key, ttl, ord)
       ), blocked AS (
         SELECT i.ord, GREATEST(0, EXTRACT(EPOCH FROM (s.expires_at - now())) * 1000)::bigint AS ms
         FROM input i JOIN shared_state s ON s.key = i.block_key AND s.expires_at > now()
       ), open AS (
         SELECT i.* FROM input i WHERE NOT EXISTS (SELECT 1 FROM blocked b WHERE b.ord = i.ord AND b.ms > 0)
       ), counted AS (
         INSERT INTO shared_state AS s (key, value, expires_at)
         SELECT key, count(*)::text, now() + (array_agg(ttl ORDER BY ord))[1] * interval '1 millisecond' FROM open GROUP BY key ORDER BY key
         ON CONFLICT (key) DO UPDATE SET
           value = CASE WHEN s.expires_at <= now() THEN excluded.value ELSE (s.value::bigint + excluded.value::bigint)::text END,
           expires_at = CASE WHEN s.expires_at <= now() THEN excluded.expires_at ELSE s.expires_at END
         RETURNING key, value, GREATEST(0, EXTRACT(EPOCH FROM (expires_at - now())) * 1000)::bigint AS ttl
       )
       SELECT i.ord, b.ms AS blocked,
              CASE WHEN c.value IS NULL OR b.ms > 0 THEN NULL
                   ELSE (c.value::bigint - (SELECT count(*) FROM open o WHERE o.key = i.key AND o.ord > i.ord))::text END AS value,
              c.ttl
       FROM input i LEFT JOIN blocked b ON b.ord = i.ord LEFT JOIN counted c ON c.key = i.key
       ORDER BY i.ord`,
      [batch.map((h) => h.key), batch.map((h) => h.blockKey), batch.map((h) => Math.max(1, Math.round(h.ttlMs)))],
    );
    const rows = rowsOf<{ blocked: string | null; value: string | null; ttl: string | null }>(result);
    return batch.map((_, i) => hitAnswer(rows[i]?.blocked ?? null, rows[i]?.value ?? null, rows[i]?.ttl ?? null));
  }

  async ping(): Promise<void> {
    await this.db.query('SELECT 1');
  }
}

/** TypeORM answers UPDATE/DELETE ... RETURNING with [rows, affectedCount], other statements with rows. */
function rowsOf<Row>(result: unknown[]): Row[] {
  return (Array.isArray(result[0]) ? result[0] : result) as Row[];
}

interface PendingHit {
  key: string;
  blockKey: string;
  ttlMs: number;
  resolve: (answer: HitAnswer) => void;
  reject: (e: unknown) => void;
}

/** Hits sent in one statement at most (a flood's batch stays a statement of bounded size). */
const MAX_HITS_PER_STATEMENT = 256;

function hitAnswer(blocked: string | null, value: string | null, ttl: string | null): HitAnswer {
  const blockedMs = Number(blocked ?? 0);
  if (blockedMs > 0 || value == null) return { blockedMs: Math.max(1, blockedMs), count: 0, ttlMs: 0 };
  return { blockedMs: 0, count: Number(value), ttlMs: Number(ttl) };
}
