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
    const [row] = await this.db.query(`SELECT count(*)::int AS n FROM ai_api_keys WHERE revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())`);
    return row.n;
  }

  /**
   * Atomically sets aside `amount` yuan of the key's budget. One UPDATE re-checks the condition
   * under the row lock, so concurrent reservations can never together exceed the budget.
   * Returns false when the budget cannot cover it.
   */
  async reserve(id: string, amount: string): Promise<boolean> {
    // TypeORM answers an UPDATE with [rows, affectedCount].
    const [rows] = await this.db.query(
      `UPDATE ai_api_keys SET reserved_yuan = reserved_yuan + $2::numeric
        WHERE id = $1 AND (budget_yuan IS NULL OR spent_yuan + reserved_yuan + $2::numeric <= budget_yuan)
        RETURNING id`,
      [id, amount],
    );
    return rows.length === 1;
  }

  /** Releases a reservation and charges the real cost in one statement. */
  async settle(id: string, reserved: string, cost: string): Promise<void> {
    await this.db.query(
      `UPDATE ai_api_keys SET reserved_yuan = GREATEST(reserved_yuan - $2::numeric, 0), spent_yuan = spent_yuan + $3::numeric, last_used_at = now()
        WHERE id = $1`,
      [id, reserved, cost],
    );
  }

  /** Remaining budget in yuan (budget − spent − reserved), or null when the key has no budget. */
  async remaining(id: string): Promise<string | null> {
    const [row] = await this.db.query(`SELECT (budget_yuan - spent_yuan - reserved_yuan)::text AS remaining FROM ai_api_keys WHERE id = $1`, [id]);
    return row?.remaining ?? null;
  }
}
