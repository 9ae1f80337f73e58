import { Injectable } from '@nestjs/common';
import type { Principal } from '@app/auth';
import { GatewayError, GatewayErrorCode } from '../errors';
import { LlmRouter, ModelInfo, TextCompletionRequest, Usage } from '@app/llm';
import { assertModel, assertScope, shareOf } from '../keys/key-scopes';
import { CallOutcome, MeteringService, Reservation } from '../usage/metering.service';
import { tokenCost } from '../usage/pricing';
import { OVERHEAD_HEADER } from '../http/call-timer';
import type { CallAnswer, CallContext, EventStreamAnswer, JsonAnswer } from '../http/call-context';
import { relayEvents } from '../http/relay-stream';
import { Tokenizer } from '../tokenizer/tokenizer';
import { toGatewayError } from '../upstreams/upstream-errors';
import { LedgerFacts, meteredUpstreamCall } from '../usage/metered-upstream-call';
import { CompletionRequest } from './dtos/completion.dto';

const ENDPOINT = 'completions';
/** OpenAI's default `max_tokens` for /v1/completions. */
export const DEFAULT_COMPLETION_MAX_TOKENS = 16;

interface Prepared {
  info: ModelInfo;
  promptTokens: number;
  upstream: TextCompletionRequest;
  reservation: Reservation;
}

/** POST /v1/completions (legacy text completions): passed to OpenAI-type upstreams, reserved and metered like chat. */
@Injectable()
export class CreateCompletion {
  constructor(
    private readonly router: LlmRouter,
    private readonly tokenizer: Tokenizer,
    private readonly metering: MeteringService,
  ) {}

  /** The completion as JSON, or its event stream; a failure before the answer starts is thrown as a catalog error. */
  async handle(principal: Principal, body: CompletionRequest, ctx: CallContext): Promise<CallAnswer> {
    try {
      const prepared = await this.prepare(principal, body, ctx);
      return body.stream ? await this.stream(prepared, body, ctx) : await this.complete(prepared, ctx);
    } catch (e) {
      throw toGatewayError(e);
    }
  }

  private async prepare(principal: Principal, body: CompletionRequest, ctx: CallContext): Promise<Prepared> {
    const claims = assertScope(principal, 'chat');
    const info = this.router.modelInfo(body.model);
    if (!info) throw new GatewayError(GatewayErrorCode.ModelNotFound, { model: body.model });
    if (info.kind !== 'chat')
      throw new GatewayError(GatewayErrorCode.ModelKindMismatch, { model: body.model, expected: 'completion' });
    assertModel(claims, body.model);
    if (!this.router.isServed(body.model)) throw new GatewayError(GatewayErrorCode.NoProvider, { model: body.model });
    if (!this.router.servesTextCompletions(body.model))
      throw new GatewayError(GatewayErrorCode.TextCompletionsUnsupported, { model: body.model });

    const prompts: Array<string | number[]> =
      typeof body.prompt === 'string'
        ? [body.prompt]
        : body.prompt.every((p) => typeof p === 'number')
          ? [body.prompt]
          : body.prompt;
    const maxTokens = body.max_tokens ?? DEFAULT_COMPLETION_MAX_TOKENS;
    // One pace for every text of the request: 64 prompts of 16k characters give the event loop turns
    // as one long prompt does (a fresh pace per text would count each without yielding).
    const pace = this.tokenizer.pace(shareOf(principal), ctx.clientGone);
    // The suffix is sent with every prompt and the upstream bills it as prompt: it counts into each
    // prompt's context check and into the reservation.
    const suffixTokens = body.suffix
      ? await this.tokenizer.countUpToAsync(body.suffix, info.encoding, info.contextLength + 1, pace)
      : 0;
    let promptTokens = 0;
    for (const [i, p] of prompts.entries()) {
      const own =
        typeof p === 'string'
          ? await this.tokenizer.countUpToAsync(p, info.encoding, info.contextLength + 1 - suffixTokens, pace)
          : p.length;
      const tokens = own + suffixTokens;
      if (tokens + maxTokens > info.contextLength) {
        const where = `${own} in your prompt${prompts.length > 1 ? ` ${i}` : ''}${suffixTokens ? `, ${suffixTokens} in your suffix` : ''}`;
        throw new GatewayError(GatewayErrorCode.PromptTooLong, {
          limit: info.contextLength,
          requested: tokens + maxTokens,
          where,
          completionTokens: maxTokens,
          param: suffixTokens + maxTokens > info.contextLength ? 'suffix' : 'prompt',
        });
      }
      promptTokens += tokens;
    }
    // Every prompt gets max(n, best_of) generations of up to max_tokens each, all billed.
    const generations = prompts.length * Math.max(body.n ?? 1, body.best_of ?? 1);
    const promptHold = Math.ceil(promptTokens * 1.1) + 16;
    const reservation = await this.metering.reserve(principal, {
      model: info.name,
      yuan: tokenCost(info, { promptTokens: promptHold, completionTokens: maxTokens * generations }),
      tokens: promptHold + maxTokens * generations,
      headers: ctx.rateLimits,
      alive: ctx.alive,
    });
    const upstream: TextCompletionRequest = { ...(body as unknown as TextCompletionRequest), max_tokens: maxTokens };
    delete upstream.stream_options;
    return { info, promptTokens, upstream, reservation };
  }

  private async complete(p: Prepared, ctx: CallContext): Promise<JsonAnswer> {
    const timer = ctx.timer;
    const { value: result, deployment } = await meteredUpstreamCall(
      this.metering,
      p.reservation,
      ctx,
      facts(p),
      (opts) => this.router.completions({ ...p.upstream, stream: false }, opts),
    );
    result.usage = await this.usageOf(
      result.usage,
      p,
      result.choices.map((c) => (typeof c?.text === 'string' ? c.text : '')).join(''),
    );
    await this.metering.settle(p.reservation, this.outcome(p, ctx, 'ok', result.usage, deployment));
    return { kind: 'json', body: result, headers: [OVERHEAD_HEADER, timer.overheadMs()], settled: Promise.resolve() };
  }

  private async stream(p: Prepared, body: CompletionRequest, ctx: CallContext): Promise<EventStreamAnswer> {
    const timer = ctx.timer;
    const wantsUsage = body.stream_options?.include_usage === true;
    const routed = await meteredUpstreamCall(this.metering, p.reservation, ctx, facts(p), (opts) =>
      this.router.completionsStream({ ...p.upstream, stream: true }, opts),
    );
    const relayed = relayEvents(ctx.clientGone, routed.value, {
      wantsUsage,
      events: (chunk) => [chunk],
      generated: (choice) => {
        const text = (choice as { text?: unknown } | null)?.text;
        return typeof text === 'string' ? text : '';
      },
      usage: (upstream, delivered) => this.usageOf(upstream, p, delivered),
      end: () => ['[DONE]'],
      failed: (error) => [{ error }],
      settle: (status, usage, error) =>
        this.metering.settle(p.reservation, { ...this.outcome(p, ctx, status, usage, routed.deployment), error }),
    });
    return { kind: 'stream', headers: { [OVERHEAD_HEADER]: timer.overheadMs() }, ...relayed };
  }

  /** Upstream usage when it came; otherwise our own count of the prompt and the delivered text. */
  private async usageOf(upstream: Usage | null | undefined, p: Prepared, deliveredText: string): Promise<Usage> {
    if (upstream && Number.isFinite(upstream.prompt_tokens) && Number.isFinite(upstream.completion_tokens)) {
      return {
        prompt_tokens: upstream.prompt_tokens,
        completion_tokens: upstream.completion_tokens,
        total_tokens: upstream.prompt_tokens + upstream.completion_tokens,
      };
    }
    const completion = await this.tokenizer.countUpToAsync(deliveredText, p.info.encoding, Infinity);
    return { prompt_tokens: p.promptTokens, completion_tokens: completion, total_tokens: p.promptTokens + completion };
  }

  private outcome(
    p: Prepared,
    ctx: CallContext,
    status: CallOutcome['status'],
    usage: Usage,
    provider: string,
  ): CallOutcome {
    return {
      endpoint: ENDPOINT,
      model: p.info.name,
      provider,
      status,
      costYuan:
        status === 'failed'
          ? 0
          : tokenCost(p.info, { promptTokens: usage.prompt_tokens, completionTokens: usage.completion_tokens }),
      promptTokens: usage.prompt_tokens,
      completionTokens: usage.completion_tokens,
      httpStatus: 200,
      requestId: ctx.requestId,
    };
  }
}

const facts = (p: Prepared): LedgerFacts => ({ endpoint: ENDPOINT, model: p.info.name });
