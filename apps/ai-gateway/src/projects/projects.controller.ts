import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query } from '@nestjs/common';
import { ApiBody, ApiCreatedResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { AuditContext, AuditRequest } from '@app/audit';
import { Roles } from '@app/auth';
import { ApiOpenAiErrors } from '../http/openai-error.doc';
import {
  CreateProjectRequest,
  DeletedProjectResponse,
  ListProjectsQuery,
  ProjectListResponse,
  ProjectResponse,
  UpdateProjectRequest,
} from './dtos/project.dto';
import { ProjectsService } from './projects.service';

@ApiTags('admin')
@Roles('admin')
@Controller('admin/projects')
export class ProjectsController {
  constructor(private readonly projects: ProjectsService) {}

  @Post()
  @HttpCode(201)
  @ApiOperation({
    summary: 'Create a project',
    description:
      "Bearer ADMIN_TOKEN. Its limits and budgets bind all of its keys together, on top of each key's own; keys join it with `project_id`.",
  })
  @ApiBody({
    type: CreateProjectRequest,
    examples: {
      limited: {
        value: {
          name: 'web',
          requests_per_minute: 600,
          tokens_per_minute: 200000,
          max_concurrent_requests: 20,
          model_limits: { 'vendor-gpt-4': { tokens_per_minute: 20000, max_concurrent_requests: 4 } },
          budget_yuan: 500,
          budget_tokens: 50000000,
          budget_period: 'monthly',
          alert_threshold: 0.8,
        },
      },
      unlimited: { value: { name: 'internal batch jobs' } },
    },
  })
  @ApiCreatedResponse({ type: ProjectResponse })
  @ApiOpenAiErrors(400, 401, 403)
  create(@Body() body: CreateProjectRequest, @AuditRequest() ctx: AuditContext): Promise<ProjectResponse> {
    return this.projects.create(body, ctx);
  }

  @Get()
  @Roles('viewer')
  @ApiOperation({ summary: 'List projects (newest first)', description: '`q` matches a part of the name.' })
  @ApiOkResponse({ type: ProjectListResponse })
  @ApiOpenAiErrors(400, 401, 403)
  list(@Query() q: ListProjectsQuery): Promise<ProjectListResponse> {
    return this.projects.list({ q: q.q, limit: q.limit ?? 100, offset: q.offset ?? 0 });
  }

  @Get(':id')
  @Roles('viewer')
  @ApiOperation({
    summary: 'Get one project',
    description: 'With its limits, the current period of its budgets (`budget_usage`) and `key_count`.',
  })
  @ApiOkResponse({ type: ProjectResponse })
  @ApiOpenAiErrors(401, 403, 404)
  get(@Param('id') id: string): Promise<ProjectResponse> {
    return this.projects.get(id);
  }

  @Patch(':id')
  @ApiOperation({
    summary: 'Change name, limits or budgets',
    description: '`null` removes a limit. Takes effect for its keys on every replica within AI_KEY_CACHE_TTL_MS.',
  })
  @ApiBody({
    type: UpdateProjectRequest,
    examples: {
      raiseBudget: { value: { budget_yuan: 1000 } },
      dailyTokens: { value: { budget_tokens: 2000000, budget_period: 'daily' } },
      removeModelLimits: { value: { model_limits: null } },
    },
  })
  @ApiOkResponse({ type: ProjectResponse })
  @ApiOpenAiErrors(400, 401, 403, 404)
  update(
    @Param('id') id: string,
    @Body() body: UpdateProjectRequest,
    @AuditRequest() ctx: AuditContext,
  ): Promise<ProjectResponse> {
    return this.projects.update(id, body, ctx);
  }

  @Delete(':id')
  @ApiOperation({
    summary: 'Delete a project',
    description:
      'Refused with 409 `project_has_keys` while keys that are not revoked belong to it (move them with PATCH /admin/keys/{id} `project_id`, or revoke them). Its revoked keys keep their usage and lose their project_id.',
  })
  @ApiOkResponse({ type: DeletedProjectResponse })
  @ApiOpenAiErrors(401, 403, 404, 409)
  delete(@Param('id') id: string, @AuditRequest() ctx: AuditContext): Promise<DeletedProjectResponse> {
    return this.projects.delete(id, ctx);
  }
}
