import { Body, Controller, HttpCode, OnModuleInit, Post, Req, Res } from '@nestjs/common';
import { ApiExtraModels, ApiTags } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { CurrentPrincipal, Principal } from '@app/auth';
import { HttpPipeline } from '@app/platform';
import { ApiOpenAiErrors } from '../http/openai-error.doc';
import { ApiCreateChatCompletion } from './chat.doc';
import { ChatRequestPipe, validateChatRequest } from './chat-request.pipe';
import { CreateChatCompletion } from './create-chat-completion';
import { ChatCompletionChunkDoc, ChatCompletionRequest, ContentPartDoc } from './dtos/chat-completion.dtos';

@ApiTags('chat')
@ApiExtraModels(ContentPartDoc, ChatCompletionChunkDoc)
@Controller('v1/chat')
export class ChatController implements OnModuleInit {
  constructor(
    private readonly createChatCompletion: CreateChatCompletion,
    private readonly pipeline: HttpPipeline,
  ) {}

  /** The gateway's busiest route is served directly by the app's pipeline (HttpPipeline), with the same handler. */
  onModuleInit(): void {
    this.pipeline.route({ method: 'POST', path: '/v1/chat/completions', handle: async (req, res) => this.create(req.principal, await validateChatRequest(req.body), req, res) });
  }

  @Post('completions')
  @HttpCode(200)
  @ApiCreateChatCompletion()
  @ApiOpenAiErrors(400, 401, 403, 404, 413, 429, 502, 503, 504)
  async create(@CurrentPrincipal() principal: Principal, @Body(ChatRequestPipe) body: object, @Req() req: Request, @Res() res: Response): Promise<void> {
    // `object`, not the DTO: the global pipe would refuse unknown top-level fields; ChatRequestPipe validates.
    await this.createChatCompletion.handle(principal, body as ChatCompletionRequest, req, res);
  }
}
