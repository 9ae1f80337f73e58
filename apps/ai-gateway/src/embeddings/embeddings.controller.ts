import { Body, Controller, HttpCode, OnModuleInit, Post, Req, Res } from '@nestjs/common';
import { ApiBody, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { CurrentPrincipal, Principal } from '@app/auth';
import { ApiOpenAiErrors } from '../routing/openai-error.doc';
import { LeanRoutes } from '../routing/lean-routes';
import { quickAcceptEmbeddings } from '../routing/quick-accept';
import { CreateEmbeddings, EmbeddingsResult } from './create-embeddings';
import { EmbeddingsRequest, EmbeddingsResponseDoc } from './dtos/embeddings.dtos';

@ApiTags('embeddings')
@Controller('v1')
export class EmbeddingsController implements OnModuleInit {
  constructor(
    private readonly createEmbeddings: CreateEmbeddings,
    private readonly lean: LeanRoutes,
  ) {}

  /** API clients' calls take the lean path (routing/lean-routes.ts); this route serves the rest. */
  onModuleInit(): void {
    this.lean.add({ path: '/v1/embeddings', dto: EmbeddingsRequest, accept: quickAcceptEmbeddings, handle: (principal, body, req, res) => this.createEmbeddings.handle(principal, body, req, res) });
  }

  @Post('embeddings')
  @HttpCode(200)
  @ApiOperation({
    summary: 'Create embeddings (OpenAI-compatible)',
    description: 'One vector per input, in input order. Repeated texts are served from a shared cache by (model, dimensions, input). Every response carries `X-Gateway-Overhead-Ms`.',
  })
  @ApiBody({
    type: EmbeddingsRequest,
    examples: {
      single: { value: { model: 'text-embedding-v3', input: '今天天气很好' } },
      batchBase64: { value: { model: 'text-embedding-v3-small', input: ['first text', 'second text'], encoding_format: 'base64', dimensions: 256 } },
    },
  })
  @ApiOkResponse({ type: EmbeddingsResponseDoc })
  @ApiOpenAiErrors(400, 401, 403, 404, 413, 429, 502, 503, 504)
  create(@CurrentPrincipal() principal: Principal, @Body() body: EmbeddingsRequest, @Req() req: Request, @Res({ passthrough: true }) res: Response): Promise<EmbeddingsResult> {
    return this.createEmbeddings.handle(principal, body, req, res);
  }
}
