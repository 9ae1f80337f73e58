import { Body, Controller, HttpCode, OnModuleInit, Post, Req, Res } from '@nestjs/common';
import { ApiBody, ApiHeader, ApiOkResponse, ApiOperation, ApiProduces, ApiTags } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { CurrentPrincipal, Principal } from '@app/auth';
import { ApiOpenAiErrors } from '../routing/openai-error.doc';
import { LeanRoutes } from '../routing/lean-routes';
import { quickAcceptChat } from '../routing/quick-accept';
import { CreateChatCompletion } from './create-chat-completion';
import { ChatCompletionRequest, ChatCompletionResponse } from './dtos/chat-completion.dtos';

@ApiTags('chat')
@Controller('v1/chat')
export class ChatController implements OnModuleInit {
  constructor(
    private readonly createChatCompletion: CreateChatCompletion,
    private readonly lean: LeanRoutes,
  ) {}

  /** API clients' calls take the lean path (routing/lean-routes.ts); this route serves the rest. */
  onModuleInit(): void {
    this.lean.add({ path: '/v1/chat/completions', dto: ChatCompletionRequest, accept: quickAcceptChat, handle: (principal, body, req, res) => this.createChatCompletion.handle(principal, body, req, res) });
  }

  @Post('completions')
  @HttpCode(200)
  @ApiOperation({
    summary: 'Create a chat completion (OpenAI-compatible)',
    description:
      'With `stream: true` the answer is `text/event-stream`: `data: {chunk}` lines, each forwarded as it arrives, then `data: [DONE]`. ' +
      'Add `stream_options: {"include_usage": true}` for a last chunk carrying `usage`. A failure after the stream started arrives as `data: {"error": {...}}`. ' +
      'Every response carries `X-Gateway-Overhead-Ms` (time spent inside the gateway, upstream waits excluded).',
  })
  @ApiProduces('application/json', 'text/event-stream')
  @ApiBody({
    type: ChatCompletionRequest,
    examples: {
      simple: { value: { model: 'vendor-gpt-4-mini', messages: [{ role: 'user', content: 'Say hello in Chinese.' }] } },
      streamed: { value: { model: 'vendor-claude-3', stream: true, stream_options: { include_usage: true }, max_tokens: 200, messages: [{ role: 'system', content: 'You are concise.' }, { role: 'user', content: 'Write a haiku about autumn.' }] } },
    },
  })
  @ApiOkResponse({ type: ChatCompletionResponse, description: 'The completion (or the event stream when `stream` is true)' })
  @ApiHeader({ name: 'Authorization', description: 'Bearer <API_KEY>', required: true })
  @ApiOpenAiErrors(400, 401, 403, 404, 413, 429, 502, 503, 504)
  async create(@CurrentPrincipal() principal: Principal, @Body() body: ChatCompletionRequest, @Req() req: Request, @Res() res: Response): Promise<void> {
    await this.createChatCompletion.handle(principal, body, req, res);
  }
}
