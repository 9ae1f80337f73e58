import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, Repository } from 'typeorm';
import { ApiKey } from './api-key.entity';

export type ApiKeyChanges = Partial<Pick<ApiKey, 'name' | 'scopes' | 'models' | 'requestsPerMinute' | 'budgetYuan' | 'expiresAt'>>;

/** The only place that touches ai_api_keys. Money is passed as decimal strings to stay exact. */
@Injectable()
export class ApiKeysRepository {
  private readonly repo: Repository<ApiKey>;

  constructor(@InjectDataSource() private readonly db: DataSource) {
    this.repo = db.getRepository(ApiKey);
  }

  async insert(fields: ApiKeyChanges & { name: string; prefix: string; keyHash: string }): Promise<ApiKey> {
    const saved = await this.repo.save(this.repo.create(fields));
    return (await this.findById(saved.id))!;
  }

  findById(id: string): Promise<ApiKey | null> {
    return this.repo.findOne({ where: { id } });
  }

  findByHash(keyHash: string): Promise<ApiKey | null> {
    return this.repo.createQueryBuilder('k').where('k.key_hash = :keyHash', { keyHash }).getOne();
  }

  list(opts: { includeRevoked: boolean; limit: number; offset: number }): Promise<[ApiKey[], number]> {
    const qb = this.repo.createQueryBuilder('k').orderBy('k.created_at', 'DESC').take(opts.limit).skip(opts.offset);
    if (!opts.includeRevoked) qb.where('k.revoked_at IS NULL');
    return qb.getManyAndCount();
  }

  async update(id: string, changes: ApiKeyChanges): Promise<ApiKey | null> {
    if (Object.keys(changes).length) await this.repo.update({ id }, changes);
    return this.findById(id);
  }

  async revoke(id: string): Promise<ApiKey | null> {
    await this.db.query(`UPDATE ai_api_keys SET revoked_at = COALESCE(revoked_at, now()), updated_at = now() WHERE id = $1`, [id]);
    return this.findById(id);
  }

  async countUsable(): Promise<number> {
    const [row] = await this.db.query<Array<{ n: number }>>(`SELECT count(*)::int AS n FROM ai_api_keys WHERE revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())`);
    return row.n;
  }

  /**
   * Atomically sets aside `amount` yuan of the key's budget and records the hold (expiring at
   * `ttlMs`). One statement re-checks the budget under the row lock, so concurrent reservations can
   * never together exceed it. Returns the hold id, or null when the budget cannot cover it.
   */
  async reserve(id: string, amount: string, ttlMs: number): Promise<string | null> {
    const rows = await this.db.query<Array<{ id: string }>>(
      `WITH k AS (
         UPDATE ai_api_keys SET reserved_yuan = reserved_yuan + $2::numeric
          WHERE id = $1 AND (budget_yuan IS NULL OR spent_yuan + reserved_yuan + $2::numeric <= budget_yuan)
          RETURNING id)
       INSERT INTO ai_budget_holds (key_id, amount, expires_at)
       SELECT id, $2::numeric, now() + $3::int * interval '1 millisecond' FROM k
       RETURNING id`,
      [id, amount, ttlMs],
    );
    return rows[0]?.id ?? null;
  }

  /** Releases a hold (if it has not expired already) and charges the real cost, in one statement. */
  async settle(id: string, holdId: string | null, cost: string): Promise<void> {
    await this.db.query(
      `WITH h AS (DELETE FROM ai_budget_holds WHERE id = $2 AND key_id = $1 RETURNING amount)
       UPDATE ai_api_keys SET reserved_yuan = GREATEST(reserved_yuan - COALESCE((SELECT amount FROM h), 0), 0),
              spent_yuan = spent_yuan + $3::numeric, last_used_at = now()
        WHERE id = $1`,
      [id, holdId, cost],
    );
  }

  /** Frees holds whose call never settled (a crashed or killed process); returns how many. */
  async releaseExpiredHolds(): Promise<number> {
    // An UPDATE's result comes as [returned rows, affected count].
    const [rows] = await this.db.query<[Array<{ n: string }>, number]>(
      `WITH h AS (DELETE FROM ai_budget_holds WHERE expires_at < now() RETURNING key_id, amount),
            s AS (SELECT key_id, sum(amount) AS amount, count(*) AS n FROM h GROUP BY key_id)
       UPDATE ai_api_keys k SET reserved_yuan = GREATEST(k.reserved_yuan - s.amount, 0)
         FROM s WHERE k.id = s.key_id
       RETURNING s.n`,
    );
    return rows.reduce((t, r) => t + Number(r.n), 0);
  }

  /** Remaining budget in yuan (budget − spent − reserved), or null when the key has no budget. */
  async remaining(id: string): Promise<string | null> {
    const [row] = await this.db.query<Array<{ remaining: string | null } | undefined>>(`SELECT (budget_yuan - spent_yuan - reserved_yuan)::text AS remaining FROM ai_api_keys WHERE id = $1`, [id]);
    return row?.remaining ?? null;
  }
}
