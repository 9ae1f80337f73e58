import { ChatCompletionChunk } from '@app/llm';
import type { CallContext, EventStreamAnswer, JsonAnswer } from '../http/call-context';
import { Tokenizer } from '../tokenizer/tokenizer';
import type { CallOutcome } from '../usage/metering.service';
import { CreateChatCompletion } from './create-chat-completion.service';
import { ChatCompletionRequest } from './dtos/chat-completion.dto';
import { callContext, keyPrincipal, modelInfo } from '../../../../test/ai-gateway/use-case-fixtures';

// The use case with a real tokenizer and an in-memory router and ledger: its answers are values.
describe('CreateChatCompletion', () => {
  const info = modelInfo();
  const principal = keyPrincipal;
  const completion = {
    id: 'c1',
    object: 'chat.completion',
    created: 1,
    model: 'm',
    choices: [{ index: 0, message: { role: 'assistant', content: 'Hello!' }, finish_reason: 'stop' }],
    usage: { prompt_tokens: 9, completion_tokens: 2, total_tokens: 11 },
  };
  const chunk = (content: string, usage?: object): ChatCompletionChunk =>
    ({
      id: 'c1',
      object: 'chat.completion.chunk',
      created: 1,
      model: 'm',
      choices: content ? [{ index: 0, delta: { content }, finish_reason: null }] : [],
      ...(usage ? { usage } : {}),
    }) as never;
  let settled: CallOutcome[];
  let reserved: Array<{ headers?: unknown; alive?: unknown }>;
  let upstreamSignal: AbortSignal | undefined;
  let useCase: CreateChatCompletion;
  const body = (extra: object = {}) =>
    ({ model: 'm', messages: [{ role: 'user', content: 'Say hello' }], ...extra }) as ChatCompletionRequest;
  const context = (): CallContext => callContext('req-1', 'chat.completions');

  beforeEach(() => {
    settled = [];
    reserved = [];
    const router = {
      modelInfo: () => info,
      isServed: () => true,
      chat: async (_req: unknown, opts: { signal: AbortSignal }) => (
        (upstreamSignal = opts.signal),
        { value: structuredClone(completion), deployment: 'd1' }
      ),
      chatStream: async (_req: unknown, opts: { signal: AbortSignal }) => {
        upstreamSignal = opts.signal;
        async function* chunks() {
          yield chunk('Hel');
          yield chunk('lo');
          yield chunk('', { prompt_tokens: 9, completion_tokens: 2, total_tokens: 11 });
        }
        return { value: chunks(), deployment: 'd1' };
      },
    };
    const metering = {
      reserve: async (_p: unknown, hold: { headers?: unknown; alive?: unknown }) => (
        reserved.push(hold),
        { keyId: 'k1', admitted: null, settled: false, startedAt: 0 }
      ),
      settle: async (_r: unknown, outcome: CallOutcome) => void settled.push(outcome),
    };
    useCase = new CreateChatCompletion(
      router as never,
      new Tokenizer(),
      metering as never,
      { AI_COMPLETION_RESERVE_TOKENS: 512 } as never,
    );
  });

  it('answers a completion as a JSON value with its overhead header, settled with the request id and the upstream usage', async () => {
    const ctx = context();
    const answer = (await useCase.handle(principal, body(), ctx)) as JsonAnswer;
    expect(answer.kind).toBe('json');
    expect(answer.body).toMatchObject({
      object: 'chat.completion',
      usage: { prompt_tokens: 9, completion_tokens: 2 },
      choices: [{ logprobs: null, message: { content: 'Hello!', refusal: null } }],
    });
    expect(answer.headers).toEqual(['X-Gateway-Overhead-Ms', expect.stringMatching(/^\d+\.\d{2}$/)]);
    await answer.settled;
    expect(settled).toEqual([
      expect.objectContaining({
        endpoint: 'chat.completions',
        status: 'ok',
        provider: 'd1',
        promptTokens: 9,
        completionTokens: 2,
        requestId: 'req-1',
      }),
    ]);
    // The reservation writes its rate-limit values into the call's, and knows whether the call still runs.
    expect(reserved[0]).toMatchObject({ headers: ctx.rateLimits, alive: ctx.alive });
    expect(upstreamSignal).toBe(ctx.clientGone.signal);
  });

  it('answers a stream as events ending in [DONE], settled before [DONE] is produced', async () => {
    const answer = (await useCase.handle(
      principal,
      body({ stream: true, stream_options: { include_usage: true } }),
      context(),
    )) as EventStreamAnswer;
    expect(answer.kind).toBe('stream');
    expect(answer.headers).toEqual({ 'X-Gateway-Overhead-Ms': expect.stringMatching(/^\d+\.\d{2}$/) });
    const events: unknown[] = [];
    for await (const event of answer.events) {
      if (event === '[DONE]') expect(settled).toHaveLength(1);
      events.push(event);
    }
    expect(
      events.map((e) =>
        typeof e === 'string'
          ? e
          : ((e as { choices: Array<{ delta: { content: string } }> }).choices[0]?.delta.content ?? 'usage'),
      ),
    ).toEqual(['Hel', 'lo', 'usage', '[DONE]']);
    await expect(answer.settled).resolves.toBe('ok');
    expect(settled[0]).toMatchObject({ status: 'ok', promptTokens: 9, completionTokens: 2, requestId: 'req-1' });
  });

  it('a client that left mid-stream is settled as aborted and billed what was delivered; no [DONE]', async () => {
    const ctx = context();
    const answer = (await useCase.handle(principal, body({ stream: true }), ctx)) as EventStreamAnswer;
    const events: unknown[] = [];
    for await (const event of answer.events) {
      events.push(event);
      ctx.clientGone.abort(); // what the transport does when the client stops reading
    }
    expect(events).toHaveLength(1);
    await expect(answer.settled).resolves.toBe('aborted');
    expect(settled[0]).toMatchObject({ status: 'aborted', completionTokens: 0 });
  });

  it('refuses an unknown model as a catalog error, before anything is reserved', async () => {
    const unknown = new CreateChatCompletion(
      { modelInfo: () => undefined } as never,
      new Tokenizer(),
      { reserve: jest.fn() } as never,
      {} as never,
    );
    await expect(unknown.handle(principal, body({ model: 'nope' }), context())).rejects.toMatchObject({
      errorCode: 'model_not_found',
      status: 404,
    });
  });
});
