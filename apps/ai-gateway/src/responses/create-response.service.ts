import { Injectable } from '@nestjs/common';
import type { Principal } from '@app/auth';
import { CreateChatCompletion } from '../chat/create-chat-completion.service';
import type { CallAnswer, CallContext } from '../http/call-context';
import { assertScope } from '../keys/key-scopes';
import { ResponsesAnswer } from './responses-answer';
import { responsesParams, withInput } from './responses-request';
import { referencesOf, ResponsesRepository } from './responses.repository';

/**
 * POST /v1/responses: the request's fields, model, scope and budget are checked first; only then are
 * references to stored responses resolved (same key only, bounded in bytes), so a refused request never
 * loads what it refers to. The request becomes a chat request run by the chat pipeline, the answer a
 * Responses object or event stream, stored before it is answered when `store` (default true) asks for
 * it — with the input as it was forwarded, never fields the upstream did not receive.
 */
@Injectable()
export class CreateResponse {
  constructor(
    private readonly chat: CreateChatCompletion,
    private readonly store: ResponsesRepository,
  ) {}

  /** The Response object as JSON, or its event stream (the chat pipeline's answer in the Responses shape). */
  async handle(principal: Principal, body: unknown, ctx: CallContext): Promise<CallAnswer> {
    // Only a key with the chat scope gets as far as reading what it stored (403 before any lookup).
    assertScope(principal, 'chat');
    const keyId = principal.id;
    const params = responsesParams(body);
    const refs = referencesOf(params.body);
    const refers = refs.previousResponseId !== undefined || refs.items.length > 0;
    if (refers) await this.chat.admitBeforeLoading(principal, params.chat.model);
    else this.chat.admit(principal, params.chat.model);
    const resolved = refers ? await this.store.resolve(keyId, params.body, refs) : undefined;
    // OpenAI's default is store: true (the AI SDK's Responses provider relies on it).
    const stored = this.store.enabled && params.body.store !== false;
    const { chat, echo, items } = withInput(params, { resolved, stored });
    const answer = new ResponsesAnswer(
      chat.model,
      echo,
      stored ? (response) => this.store.save(keyId, response, items) : undefined,
    );
    return this.chat.handle(principal, chat, ctx, answer);
  }
}
