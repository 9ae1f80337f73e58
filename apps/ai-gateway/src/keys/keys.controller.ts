import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query } from '@nestjs/common';
import { ApiBody, ApiOkResponse, ApiOperation, ApiTags, ApiCreatedResponse } from '@nestjs/swagger';
import { AuditContext, AuditRequest } from '@app/audit';
import { Roles } from '@app/auth';
import { ApiOpenAiErrors } from '../http/openai-error.doc';
import { ApiKeysService } from './api-keys.service';
import {
  ApiKeyListResponse,
  ApiKeyResponse,
  CreateApiKeyRequest,
  CreatedApiKeyResponse,
  ListApiKeysQuery,
  UpdateApiKeyRequest,
} from './dtos/api-key.dto';

@ApiTags('admin')
@Roles('admin')
@Controller('admin/keys')
export class KeysController {
  constructor(private readonly keys: ApiKeysService) {}

  @Post()
  @HttpCode(201)
  @ApiOperation({
    summary: 'Issue an API key',
    description: 'Bearer ADMIN_TOKEN. The full key is in this response only; the gateway keeps its SHA-256 hash.',
  })
  @ApiBody({
    type: CreateApiKeyRequest,
    examples: {
      demo: {
        value: {
          name: 'demo',
          scopes: ['chat', 'embeddings'],
          models: ['vendor-gpt-4-mini', 'text-embedding-v3'],
          requests_per_minute: 60,
          budget_yuan: 10,
          expires_at: '2027-01-01T00:00:00Z',
        },
      },
      unlimited: { value: { name: 'internal batch jobs' } },
    },
  })
  @ApiCreatedResponse({ type: CreatedApiKeyResponse })
  @ApiOpenAiErrors(400, 401, 403)
  create(@Body() body: CreateApiKeyRequest, @AuditRequest() ctx: AuditContext): Promise<CreatedApiKeyResponse> {
    return this.keys.create(body, ctx);
  }

  @Get()
  @Roles('viewer')
  @ApiOperation({ summary: 'List API keys (newest first)' })
  @ApiOkResponse({ type: ApiKeyListResponse })
  @ApiOpenAiErrors(400, 401, 403)
  list(@Query() q: ListApiKeysQuery) {
    return this.keys.list({
      includeRevoked: q.include_revoked === 'true',
      limit: q.limit ?? 100,
      offset: q.offset ?? 0,
      q: q.q,
      projectId: q.project_id,
    });
  }

  @Get(':id')
  @Roles('viewer')
  @ApiOperation({ summary: 'Get one API key' })
  @ApiOkResponse({ type: ApiKeyResponse })
  @ApiOpenAiErrors(401, 403, 404)
  get(@Param('id') id: string): Promise<ApiKeyResponse> {
    return this.keys.get(id);
  }

  @Patch(':id')
  @ApiOperation({
    summary: 'Change name, scopes, model allowlist, requests per minute, budget or expiry',
    description: '`null` removes a limit. Takes effect on every replica within AI_KEY_CACHE_TTL_MS.',
  })
  @ApiBody({
    type: UpdateApiKeyRequest,
    examples: {
      raiseBudget: { value: { budget_yuan: 50 } },
      removeRateLimit: { value: { requests_per_minute: null } },
    },
  })
  @ApiOkResponse({ type: ApiKeyResponse })
  @ApiOpenAiErrors(400, 401, 403, 404)
  update(
    @Param('id') id: string,
    @Body() body: UpdateApiKeyRequest,
    @AuditRequest() ctx: AuditContext,
  ): Promise<ApiKeyResponse> {
    return this.keys.update(id, body, ctx);
  }

  @Post(':id/rotate')
  @HttpCode(200)
  @ApiOperation({
    summary: 'Rotate an API key: a new secret, the same key',
    description:
      'Id, name, project, limits, budgets and usage stay; the new key is in this response only. The old secret is refused at once on the replica that rotated it and within AI_KEY_CACHE_TTL_MS (default 5 s) on the others. A revoked key cannot be rotated (409).',
  })
  @ApiOkResponse({ type: CreatedApiKeyResponse })
  @ApiOpenAiErrors(401, 403, 404, 409)
  rotate(@Param('id') id: string, @AuditRequest() ctx: AuditContext): Promise<CreatedApiKeyResponse> {
    return this.keys.rotate(id, ctx);
  }

  @Delete(':id')
  @ApiOperation({
    summary: 'Revoke an API key',
    description: 'Refused on every replica within AI_KEY_CACHE_TTL_MS (default 5 s). The record and its usage stay.',
  })
  @ApiOkResponse({ type: ApiKeyResponse })
  @ApiOpenAiErrors(401, 403, 404)
  revoke(@Param('id') id: string, @AuditRequest() ctx: AuditContext): Promise<ApiKeyResponse> {
    return this.keys.revoke(id, ctx);
  }
}
