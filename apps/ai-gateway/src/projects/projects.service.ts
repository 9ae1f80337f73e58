import { Injectable } from '@nestjs/common';
import type { AuditContext } from '@app/audit';
import { GatewayError, GatewayErrorCode } from '../errors';
import { ApiKeysService } from '../keys/api-keys.service';
import { limitChanges, LimitFields } from '../limits/limit-fields';
import type { LimitFieldsRequest } from '../limits/dtos/limit-fields.dto';
import {
  CreateProjectRequest,
  DeletedProjectResponse,
  ProjectListResponse,
  ProjectResponse,
  UpdateProjectRequest,
} from './dtos/project.dto';
import { Project } from './project.entity';
import { ProjectChanges, ProjectsRepository } from './projects.repository';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Creates, changes and deletes projects; answers them with their limits, current budget period and key count. */
@Injectable()
export class ProjectsService {
  constructor(
    private readonly projects: ProjectsRepository,
    private readonly limitFields: LimitFields,
    private readonly keys: ApiKeysService,
  ) {}

  async create(req: CreateProjectRequest, ctx: AuditContext): Promise<ProjectResponse> {
    const project = await this.projects.insert({ ...changesOf(req), name: req.name }, ctx);
    return (await this.answer([project]))[0];
  }

  async list(opts: { q?: string; limit: number; offset: number }): Promise<ProjectListResponse> {
    const [rows, total] = await this.projects.list(opts);
    return { object: 'list', data: await this.answer(rows), total };
  }

  async get(id: string): Promise<ProjectResponse> {
    return (await this.answer([await this.mustFind(id)]))[0];
  }

  async update(id: string, req: UpdateProjectRequest, ctx: AuditContext): Promise<ProjectResponse> {
    await this.mustFind(id);
    const project = await this.projects.update(id, changesOf(req), ctx);
    // A cached key carries its project's limits (keys/api-keys.repository.ts findByHash): this replica
    // forgets them now, the others within AI_KEY_CACHE_TTL_MS.
    this.keys.forgetCached();
    return (await this.answer([project!]))[0];
  }

  async delete(id: string, ctx: AuditContext): Promise<DeletedProjectResponse> {
    await this.mustFind(id);
    const result = await this.projects.delete(id, ctx);
    if (result.keys > 0) throw new GatewayError(GatewayErrorCode.ProjectHasKeys, { id, keys: result.keys });
    if (!result.deleted) throw new GatewayError(GatewayErrorCode.ProjectNotFound, { id });
    this.keys.forgetCached();
    return { id, object: 'project', deleted: true };
  }

  private async mustFind(id: string): Promise<Project> {
    const project = UUID.test(id) ? await this.projects.findById(id) : null;
    if (!project) throw new GatewayError(GatewayErrorCode.ProjectNotFound, { id });
    return project;
  }

  /** The projects as answered: limits and current budget period (one usage query), key counts (one query). */
  private async answer(projects: Project[]): Promise<ProjectResponse[]> {
    const [limits, counts] = await Promise.all([
      this.limitFields.describe(projects.map((p) => ({ scope: 'project' as const, id: p.id, limits: p.limits }))),
      this.projects.keyCounts(projects.map((p) => p.id)),
    ]);
    return projects.map((p, i) => ({
      id: p.id,
      name: p.name,
      ...limits[i],
      key_count: counts.get(p.id) ?? 0,
      created_at: p.createdAt.toISOString(),
      updated_at: p.updatedAt.toISOString(),
    }));
  }
}

function changesOf(req: LimitFieldsRequest & { name?: string }): ProjectChanges {
  const c: ProjectChanges = { limits: limitChanges(req) };
  if (req.name !== undefined) c.name = req.name;
  if (!Object.keys(c.limits!).length) delete c.limits;
  return c;
}
