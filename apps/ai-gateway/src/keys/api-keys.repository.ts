import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, Repository } from 'typeorm';
import { ApiKey } from './api-key.entity';
import { LimitColumnsEmbed } from '../limits/limit-columns';

export type ApiKeyChanges = Partial<Pick<ApiKey, 'name' | 'scopes' | 'models' | 'expiresAt' | 'projectId'>> & { limits?: Partial<LimitColumnsEmbed> };

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

  /** The key of a presented secret, with its project (whose limits bind it too). */
  findByHash(keyHash: string): Promise<ApiKey | null> {
    return this.repo.createQueryBuilder('k').leftJoinAndSelect('k.project', 'p').where('k.key_hash = :keyHash', { keyHash }).getOne();
  }

  list(opts: { includeRevoked: boolean; limit: number; offset: number }): Promise<[ApiKey[], number]> {
    const qb = this.repo.createQueryBuilder('k').orderBy('k.created_at', 'DESC').take(opts.limit).skip(opts.offset);
    if (!opts.includeRevoked) qb.where('k.revoked_at IS NULL');
    return qb.getManyAndCount();
  }

  async update(id: string, changes: ApiKeyChanges): Promise<ApiKey | null> {
    const { limits, ...own } = changes;
    const set = { ...own, ...(limits ? { limits } : {}) };
    if (Object.keys(set).length) await this.repo.update({ id }, set);
    // A key's lifetime yuan budget counts what it spent before it had one (apps/ai-gateway/src/limits).
    if (limits?.budgetYuan !== undefined || limits?.budgetPeriod !== undefined) {
      await this.db.query(
        `UPDATE ai_budget_usage u SET spent_yuan = k.spent_yuan FROM ai_api_keys k
          WHERE k.id = $1 AND u.subject = 'k:' || k.id::text AND u.period_start = to_timestamp(0)`,
        [id],
      );
    }
    return this.findById(id);
  }

  async projectExists(id: string): Promise<boolean> {
    const rows = await this.db.query<unknown[]>(`SELECT 1 FROM ai_projects WHERE id = $1`, [id]);
    return rows.length > 0;
  }

  async revoke(id: string): Promise<ApiKey | null> {
    await this.db.query(`UPDATE ai_api_keys SET revoked_at = COALESCE(revoked_at, now()), updated_at = now() WHERE id = $1`, [id]);
    return this.findById(id);
  }

  async countUsable(): Promise<number> {
    const [row] = await this.db.query<Array<{ n: number }>>(`SELECT count(*)::int AS n FROM ai_api_keys WHERE revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())`);
    return row.n;
  }
}
