import { Injectable } from '@nestjs/common';
import { containsPattern } from '@app/database';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager, Repository } from 'typeorm';
import { AuditContext, AuditLog } from '@app/audit';
import { WebhookOutbox } from '@app/webhooks';
import { ApiKey } from './api-key.entity';
import { LimitColumnsEmbed } from '../limits/limit-columns';
import { keyAuditValues } from '../audit-log/audit-values';

export type ApiKeyChanges = Partial<Pick<ApiKey, 'name' | 'scopes' | 'models' | 'expiresAt' | 'projectId'>> & {
  limits?: Partial<LimitColumnsEmbed>;
};

/** The only place that touches ai_api_keys. Money is passed as decimal strings to stay exact. */
@Injectable()
export class ApiKeysRepository {
  private readonly repo: Repository<ApiKey>;

  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly audit: AuditLog,
    private readonly outbox: WebhookOutbox,
  ) {
    this.repo = db.getRepository(ApiKey);
  }

  /** Inserts a key with its audit row and `key.created` event in one transaction. */
  insert(
    fields: ApiKeyChanges & { name: string; prefix: string; keyHash: string },
    ctx: AuditContext,
  ): Promise<ApiKey> {
    return this.db.transaction(async (m) => {
      const repo = m.getRepository(ApiKey);
      const saved = await repo.save(repo.create(fields));
      const key = (await repo.findOne({ where: { id: saved.id } }))!;
      await this.audit.record(m, {
        ...ctx,
        action: 'key.created',
        target: { type: 'api_key', id: key.id },
        after: keyAuditValues(key),
      });
      await this.outbox.enqueue(m, 'key.created', {
        id: key.id,
        name: key.name,
        prefix: key.prefix,
        project_id: key.projectId,
        created_at: key.createdAt.toISOString(),
      });
      return key;
    });
  }

  findById(id: string): Promise<ApiKey | null> {
    return this.repo.findOne({ where: { id } });
  }

  /** The key of a presented secret, with its project (whose limits bind it too). */
  findByHash(keyHash: string): Promise<ApiKey | null> {
    return this.repo
      .createQueryBuilder('k')
      .leftJoinAndSelect('k.project', 'p')
      .where('k.key_hash = :keyHash', { keyHash })
      .getOne();
  }

  /** Newest first; `q` matches a part of the name or the start of the shown prefix; `projectId` one project's keys. */
  list(opts: {
    includeRevoked: boolean;
    limit: number;
    offset: number;
    q?: string;
    projectId?: string;
  }): Promise<[ApiKey[], number]> {
    const qb = this.repo
      .createQueryBuilder('k')
      .orderBy('k.created_at', 'DESC')
      .take(opts.limit)
      .skip(opts.offset)
      .where('true');
    if (!opts.includeRevoked) qb.andWhere('k.revoked_at IS NULL');
    if (opts.q)
      qb.andWhere(`(k.name ILIKE :q ESCAPE '\\' OR k.prefix LIKE :prefix ESCAPE '\\')`, {
        q: containsPattern(opts.q),
        prefix: `${containsPattern(opts.q).slice(1)}`,
      });
    if (opts.projectId) qb.andWhere('k.project_id = :projectId', { projectId: opts.projectId });
    return qb.getManyAndCount();
  }

  /** Applies changes with the audit row (before and after) in one transaction. */
  update(id: string, changes: ApiKeyChanges, ctx: AuditContext): Promise<ApiKey | null> {
    return this.db.transaction(async (m) => {
      const before = await m.getRepository(ApiKey).findOne({ where: { id }, lock: { mode: 'pessimistic_write' } });
      if (!before) return null;
      await this.applyChanges(m, id, changes);
      const after = (await m.getRepository(ApiKey).findOne({ where: { id } }))!;
      await this.audit.record(m, {
        ...ctx,
        action: 'key.updated',
        target: { type: 'api_key', id },
        before: keyAuditValues(before),
        after: keyAuditValues(after),
      });
      return after;
    });
  }

  private async applyChanges(m: EntityManager, id: string, changes: ApiKeyChanges): Promise<void> {
    const { limits, ...own } = changes;
    const set = { ...own, ...(limits ? { limits } : {}) };
    if (Object.keys(set).length) await m.getRepository(ApiKey).update({ id }, set);
    // A key's lifetime yuan budget counts what it spent before it had one (apps/ai-gateway/src/limits).
    if (limits?.budgetYuan !== undefined || limits?.budgetPeriod !== undefined) {
      await m.query(
        `UPDATE ai_budget_usage u SET spent_yuan = k.spent_yuan FROM ai_api_keys k
          WHERE k.id = $1 AND u.subject = 'k:' || k.id::text AND u.period_start = to_timestamp(0)`,
        [id],
      );
    }
  }

  async projectExists(id: string): Promise<boolean> {
    const rows = await this.db.query<unknown[]>(`SELECT 1 FROM ai_projects WHERE id = $1`, [id]);
    return rows.length > 0;
  }

  /**
   * Gives the key a new secret (its id, limits, budgets and usage stay), with the audit row, in one transaction.
   * Null when there is no such key; the key itself, unchanged, when it is revoked (a revoked key stays revoked).
   */
  rotate(id: string, secret: { prefix: string; keyHash: string }, ctx: AuditContext): Promise<ApiKey | null> {
    return this.db.transaction(async (m) => {
      const before = await m.getRepository(ApiKey).findOne({ where: { id }, lock: { mode: 'pessimistic_write' } });
      if (!before || before.revokedAt) return before;
      await m.query(`UPDATE ai_api_keys SET key_hash = $2, prefix = $3, updated_at = now() WHERE id = $1`, [
        id,
        secret.keyHash,
        secret.prefix,
      ]);
      const after = (await m.getRepository(ApiKey).findOne({ where: { id } }))!;
      await this.audit.record(m, {
        ...ctx,
        action: 'key.rotated',
        target: { type: 'api_key', id },
        before: keyAuditValues(before),
        after: keyAuditValues(after),
      });
      return after;
    });
  }

  /** Revokes once: the audit row and `key.revoked` event are written only by the call that revoked it. */
  revoke(id: string, ctx: AuditContext): Promise<ApiKey | null> {
    return this.db.transaction(async (m) => {
      const before = await m.getRepository(ApiKey).findOne({ where: { id }, lock: { mode: 'pessimistic_write' } });
      if (!before || before.revokedAt) return before;
      await m.query(`UPDATE ai_api_keys SET revoked_at = now(), updated_at = now() WHERE id = $1`, [id]);
      const after = (await m.getRepository(ApiKey).findOne({ where: { id } }))!;
      await this.audit.record(m, {
        ...ctx,
        action: 'key.revoked',
        target: { type: 'api_key', id },
        before: keyAuditValues(before),
        after: keyAuditValues(after),
      });
      await this.outbox.enqueue(m, 'key.revoked', {
        id,
        name: after.name,
        prefix: after.prefix,
        project_id: after.projectId,
        revoked_at: after.revokedAt!.toISOString(),
      });
      return after;
    });
  }

  async countUsable(): Promise<number> {
    const [row] = await this.db.query<Array<{ n: number }>>(
      `SELECT count(*)::int AS n FROM ai_api_keys WHERE revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())`,
    );
    return row.n;
  }
}
