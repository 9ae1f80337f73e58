import { Injectable } from '@nestjs/common';
import type { Request, Response } from 'express';
import type { Principal } from '@app/auth';
import { CreateChatCompletion } from '../chat/create-chat-completion';
import { assertScope } from '../keys/key-scopes';
import { ResponsesAnswer } from './responses-answer';
import { translateResponsesRequest } from './responses-request';
import { ResponsesStore } from './responses-store';

type Obj = Record<string, unknown>;

/**
 * POST /v1/responses: references to stored responses are resolved (same key only), the request
 * becomes a chat request run by the chat pipeline, the answer a Responses object or event stream,
 * stored before it is answered when `store` (default true) asks for it.
 */
@Injectable()
export class CreateResponse {
  constructor(
    private readonly chat: CreateChatCompletion,
    private readonly store: ResponsesStore,
  ) {}

  async handle(principal: Principal, body: unknown, req: Request, res: Response): Promise<void> {
    // Only a key with the chat scope gets as far as reading what it stored (403 before any lookup).
    assertScope(principal, 'chat');
    const keyId = principal.id;
    const fields: Obj = typeof body === 'object' && body !== null && !Array.isArray(body) ? (body as Obj) : {};
    const resolved = await this.store.resolve(keyId, fields);
    // OpenAI's default is store: true (the AI SDK's Responses provider relies on it).
    const stored = this.store.enabled && fields.store !== false;
    const { chat, echo } = translateResponsesRequest(body, { resolved, stored });
    const input = resolved?.input ?? (typeof fields.input === 'string' ? [{ role: 'user', content: fields.input }] : (fields.input as unknown[]));
    const answer = new ResponsesAnswer(chat.model, echo, stored ? (response) => this.store.save(keyId, response, input) : undefined);
    await this.chat.handle(principal, chat, req, res, answer);
  }
}
