import { Injectable } from '@nestjs/common';
import type { Request, Response } from 'express';
import type { Principal } from '@app/auth';
import { CreateChatCompletion } from '../chat/create-chat-completion';
import type { ChatCompletionRequest } from '../chat/dtos/chat-completion.dtos';
import { ResponsesAnswer } from './responses-answer';
import { translateResponsesRequest } from './responses-request';

/** POST /v1/responses: the request becomes a chat request run by the chat pipeline, the answer a Responses object or event stream. */
@Injectable()
export class CreateResponse {
  constructor(private readonly chat: CreateChatCompletion) {}

  async handle(principal: Principal, body: unknown, req: Request, res: Response): Promise<void> {
    const { chat, echo } = translateResponsesRequest(body);
    await this.chat.handle(principal, chat as unknown as ChatCompletionRequest, req, res, new ResponsesAnswer(chat.model, echo));
  }
}
