import { Injectable } from '@nestjs/common';
import { containsPattern } from '@app/database';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, Repository } from 'typeorm';
import { AuditContext, AuditLog } from '@app/audit';
import type { LimitColumnsEmbed } from '../limits/limit-columns';
import { Project } from './project.entity';
import { projectAuditValues } from '../audit-log/audit-values';

export interface ProjectChanges {
  name?: string;
  limits?: Partial<LimitColumnsEmbed>;
}

/** The only place that touches ai_projects (and, on delete, the project_id of its revoked keys). */
@Injectable()
export class ProjectsRepository {
  private readonly repo: Repository<Project>;

  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly audit: AuditLog,
  ) {
    this.repo = db.getRepository(Project);
  }

  insert(fields: ProjectChanges & { name: string }, ctx: AuditContext): Promise<Project> {
    return this.db.transaction(async (m) => {
      const repo = m.getRepository(Project);
      const saved = await repo.save(repo.create(fields));
      const project = (await repo.findOne({ where: { id: saved.id } }))!;
      await this.audit.record(m, {
        ...ctx,
        action: 'project.created',
        target: { type: 'project', id: project.id },
        after: projectAuditValues(project),
      });
      return project;
    });
  }

  findById(id: string): Promise<Project | null> {
    return this.repo.findOne({ where: { id } });
  }

  /** Newest first; `q` matches a part of the name, case-insensitive (LIKE wildcards in it match themselves). */
  list(opts: { q?: string; limit: number; offset: number }): Promise<[Project[], number]> {
    const qb = this.repo
      .createQueryBuilder('p')
      .orderBy('p.created_at', 'DESC')
      .addOrderBy('p.id', 'ASC')
      .take(opts.limit)
      .skip(opts.offset);
    if (opts.q) qb.where(`p.name ILIKE :q ESCAPE '\\'`, { q: containsPattern(opts.q) });
    return qb.getManyAndCount();
  }

  update(id: string, changes: ProjectChanges, ctx: AuditContext): Promise<Project | null> {
    return this.db.transaction(async (m) => {
      const repo = m.getRepository(Project);
      const before = await repo.findOne({ where: { id }, lock: { mode: 'pessimistic_write' } });
      if (!before) return null;
      const { limits, ...own } = changes;
      const set = { ...own, ...(limits && Object.keys(limits).length ? { limits } : {}) };
      if (Object.keys(set).length) await repo.update({ id }, set);
      const after = (await repo.findOne({ where: { id } }))!;
      await this.audit.record(m, {
        ...ctx,
        action: 'project.updated',
        target: { type: 'project', id },
        before: projectAuditValues(before),
        after: projectAuditValues(after),
      });
      return after;
    });
  }

  /** For each project id, its keys that are not revoked: one query for all of them. */
  async keyCounts(ids: string[]): Promise<Map<string, number>> {
    if (!ids.length) return new Map();
    const rows = await this.db.query<Array<{ project_id: string; n: number }>>(
      `SELECT project_id, count(*)::int AS n FROM ai_api_keys WHERE project_id = ANY($1::uuid[]) AND revoked_at IS NULL GROUP BY project_id`,
      [ids],
    );
    return new Map(rows.map((r) => [r.project_id, r.n]));
  }

  /**
   * Deletes the project unless keys that are not revoked belong to it; its revoked keys lose their
   * project_id in the same transaction. The project row is locked first: a key being moved into it
   * concurrently (its foreign key check takes a share lock on that row) waits for this decision.
   * Answers `deleted: false` with the number of keys that hold it (none when it did not exist).
   */
  delete(id: string, ctx: AuditContext): Promise<{ deleted: boolean; keys: number }> {
    return this.db.transaction(async (m) => {
      const before = await m.getRepository(Project).findOne({ where: { id }, lock: { mode: 'pessimistic_write' } });
      if (!before) return { deleted: false, keys: 0 };
      const [{ n }] = await m.query<Array<{ n: number }>>(
        `SELECT count(*)::int AS n FROM ai_api_keys WHERE project_id = $1 AND revoked_at IS NULL`,
        [id],
      );
      if (n > 0) return { deleted: false, keys: n };
      await m.query(`UPDATE ai_api_keys SET project_id = NULL, updated_at = now() WHERE project_id = $1`, [id]);
      await m.query(`DELETE FROM ai_projects WHERE id = $1`, [id]);
      await this.audit.record(m, {
        ...ctx,
        action: 'project.deleted',
        target: { type: 'project', id },
        before: projectAuditValues(before),
      });
      return { deleted: true, keys: 0 };
    });
  }
}
