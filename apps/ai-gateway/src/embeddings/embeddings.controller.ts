import { Body, Controller, HttpCode, Post, Req, Res } from '@nestjs/common';
import { ApiBody, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { CurrentPrincipal, Principal } from '@app/auth';
import { GatewayConfig } from '../config/gateway.config';
import { answerCall } from '../http/call-answer';
import { ApiOpenAiErrors } from '../http/openai-error.doc';
import { CreateEmbeddings } from './create-embeddings.service';
import { EmbeddingsRequestPipe } from './embeddings-request.pipe';
import { EmbeddingsRequest, EmbeddingsResponseDoc } from './dtos/embeddings.dto';
import { Metered } from '@app/platform';

@ApiTags('embeddings')
@Controller('v1')
export class EmbeddingsController {
  constructor(
    private readonly createEmbeddings: CreateEmbeddings,
    private readonly config: GatewayConfig,
  ) {}

  @Metered()
  @Post('embeddings')
  @HttpCode(200)
  @ApiOperation({
    summary: 'Create embeddings (OpenAI-compatible)',
    description:
      "One vector per input, in input order. Inputs are texts or token arrays (ids of the model's encoding, billed by their count; forwarded as they are to OpenAI-type deployments, decoded to text for local ones). Repeated inputs are served from the key's cache by (model, dimensions, input). Every response carries `X-Gateway-Overhead-Ms`.",
  })
  @ApiBody({
    type: EmbeddingsRequest,
    examples: {
      single: { value: { model: 'text-embedding-v3', input: '今天天气很好' } },
      batchBase64: {
        value: {
          model: 'text-embedding-v3-small',
          input: ['first text', 'second text'],
          encoding_format: 'base64',
          dimensions: 256,
        },
      },
      tokenArray: {
        summary: 'One input as token ids (the model encoding)',
        value: { model: 'text-embedding-v3', input: [791, 8415, 23874, 389, 279, 5634, 13] },
      },
      tokenArrays: {
        summary: 'Several inputs as token ids (LangChain OpenAIEmbeddings sends these)',
        value: {
          model: 'text-embedding-v3',
          input: [
            [15339, 1917],
            [791, 8415, 23874],
          ],
          encoding_format: 'float',
        },
      },
    },
  })
  @ApiOkResponse({ type: EmbeddingsResponseDoc })
  @ApiOpenAiErrors(400, 401, 403, 404, 413, 429, 502, 503, 504)
  async create(
    @CurrentPrincipal() principal: Principal,
    @Body(EmbeddingsRequestPipe) body: object,
    @Req() req: Request,
    @Res() res: Response,
  ): Promise<void> {
    // `object`, not the DTO: the global pipe would validate it a second time; EmbeddingsRequestPipe validates.
    await answerCall(req, res, 'embeddings', this.config.REQUEST_TIMEOUT_MS, (ctx) =>
      this.createEmbeddings.handle(principal, body as EmbeddingsRequest, ctx),
    );
  }
}
