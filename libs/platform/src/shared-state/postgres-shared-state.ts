import { OnModuleDestroy } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { distinctEntries, SharedState } from './shared-state';

/** SharedState on the `shared_state` table; expired rows are ignored and swept once a minute. */
export class PostgresSharedState extends SharedState implements OnModuleDestroy {
  readonly backend = 'postgres' as const;
  private readonly sweeper: NodeJS.Timeout;

  constructor(private readonly db: DataSource) {
    super();
    this.sweeper = setInterval(() => {
      this.db.query('DELETE FROM shared_state WHERE expires_at < now()').catch(() => undefined);
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

  override async hit(
    key: string,
    blockKey: string,
    ttlMs: number,
  ): Promise<{ blockedMs: number; count: number; ttlMs: number }> {
    const result = await this.db.query<unknown[]>(
      `WITH blocked AS (
         SELECT GREATEST(0, EXTRACT(EPOCH FROM (expires_at - now())) * 1000)::bigint AS ms FROM shared_state WHERE key = $2 AND expires_at > now()
       ), counted AS (
         INSERT INTO shared_state AS s (key, value, expires_at)
         SELECT $1, '1', now() + $3 * interval '1 millisecond' WHERE NOT EXISTS (SELECT 1 FROM blocked WHERE ms > 0)
         ON CONFLICT (key) DO UPDATE SET
           value = CASE WHEN s.expires_at <= now() THEN '1' ELSE (s.value::bigint + 1)::text END,
           expires_at = CASE WHEN s.expires_at <= now() THEN excluded.expires_at ELSE s.expires_at END
         RETURNING value, GREATEST(0, EXTRACT(EPOCH FROM (expires_at - now())) * 1000)::bigint AS ttl
       )
       SELECT (SELECT ms FROM blocked) AS blocked, (SELECT value FROM counted) AS value, (SELECT ttl FROM counted) AS ttl`,
      [key, blockKey, ttlMs],
    );
    const row = rowsOf<{ blocked: string | null; value: string | null; ttl: string | null }>(result)[0];
    const blockedMs = Number(row?.blocked ?? 0);
    if (blockedMs > 0 || row?.value == null) return { blockedMs: Math.max(1, blockedMs), count: 0, ttlMs: 0 };
    return { blockedMs: 0, count: Number(row.value), ttlMs: Number(row.ttl) };
  }

  async ping(): Promise<void> {
    await this.db.query('SELECT 1');
  }
}

/** TypeORM answers UPDATE/DELETE ... RETURNING with [rows, affectedCount], other statements with rows. */
function rowsOf<Row>(result: unknown[]): Row[] {
  return (Array.isArray(result[0]) ? result[0] : result) as Row[];
}
