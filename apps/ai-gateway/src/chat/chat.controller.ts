import { Body, Controller, HttpCode, Post, Req, Res } from '@nestjs/common';
import { ApiExtraModels, ApiTags } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { CurrentPrincipal, Principal } from '@app/auth';
import { JsonMembersLimit, Metered } from '@app/platform';
import { GatewayConfig } from '../config/gateway.config';
import { answerCall } from '../http/call-answer';
import { ApiOpenAiErrors } from '../http/openai-error.doc';
import { ApiCreateChatCompletion } from './chat.doc';
import { ChatRequestPipe } from './chat-request.pipe';
import { MAX_CHAT_JSON_MEMBERS } from './chat-shape';
import { CreateChatCompletion } from './create-chat-completion.service';
import { ChatCompletionChunkDoc, ChatCompletionRequest, ContentPartDoc } from './dtos/chat-completion.dto';

@ApiTags('chat')
@ApiExtraModels(ContentPartDoc, ChatCompletionChunkDoc)
@Controller('v1/chat')
export class ChatController {
  constructor(
    private readonly createChatCompletion: CreateChatCompletion,
    private readonly config: GatewayConfig,
  ) {}

  @Metered()
  @Post('completions')
  @HttpCode(200)
  @JsonMembersLimit(MAX_CHAT_JSON_MEMBERS)
  @ApiCreateChatCompletion()
  @ApiOpenAiErrors(400, 401, 403, 404, 413, 429, 502, 503, 504)
  async create(
    @CurrentPrincipal() principal: Principal,
    @Body(ChatRequestPipe) body: object,
    @Req() req: Request,
    @Res() res: Response,
  ): Promise<void> {
    // `object`, not the DTO: the global pipe would refuse unknown top-level fields; ChatRequestPipe validates.
    await answerCall(req, res, 'chat.completions', this.config.REQUEST_TIMEOUT_MS, (ctx) =>
      this.createChatCompletion.handle(principal, body as ChatCompletionRequest, ctx),
    );
  }
}
