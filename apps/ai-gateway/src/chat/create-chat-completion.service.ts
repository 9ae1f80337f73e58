import { Injectable } from '@nestjs/common';
import type { Principal } from '@app/auth';
import { GatewayError, GatewayErrorCode, OpenAiErrorBody } from '../errors';
import {
  ChatCompletion,
  ChatCompletionChunk,
  ChatCompletionRequest as UpstreamChatRequest,
  LlmRouter,
  ModelInfo,
  Usage,
} from '@app/llm';
import { GatewayConfig } from '../config/gateway.config';
import { ApiKeyClaims, assertModel, assertScope, shareOf } from '../keys/key-scopes';
import { CallOutcome, MeteringService, Reservation } from '../usage/metering.service';
import { chatCost, tokenCost } from '../usage/pricing';
import { OVERHEAD_HEADER } from '../http/call-timer';
import type { CallAnswer, CallContext, EventStreamAnswer, JsonAnswer } from '../http/call-context';
import { relayEvents } from '../http/relay-stream';
import { CountedMessage, Tokenizer } from '../tokenizer/tokenizer';
import { toGatewayError } from '../upstreams/upstream-errors';
import { LedgerFacts, meteredUpstreamCall } from '../usage/metered-upstream-call';
import { ChatCompletionRequest } from './dtos/chat-completion.dto';
import { assertPriced, PricedFeatures } from './chat-pricing';

const ENDPOINT = 'chat.completions';

/**
 * Another API's wire shape over this pipeline (POST /v1/responses): the same checks, budget
 * reservation, routing, fallback and metering; only the answer's shape and the ledger endpoint differ.
 */
export interface ChatAnswerShape {
  /** Ledger endpoint name. */
  endpoint: string;
  /** The JSON answer for a finished completion (may wait, e.g. to store the response before it is answered). */
  complete(result: ChatCompletion): unknown;
  /** Stream events for one upstream chunk. */
  chunk(chunk: ChatCompletionChunk): unknown[];
  /** Closing stream events, given the usage that is metered (may wait, as `complete`). */
  end(usage: Usage): unknown[] | Promise<unknown[]>;
  /** Stream events for a failure after the stream started. */
  failed(error: OpenAiErrorBody['error']): unknown[];
}

interface Prepared {
  endpoint: string;
  info: ModelInfo;
  promptTokens: number;
  upstream: UpstreamChatRequest;
  reservation: Reservation;
  features: PricedFeatures;
  /** Completion tokens held per choice. */
  reserveOut: number;
  n: number;
}

/** POST /v1/chat/completions: checks, budget reservation, routed upstream call, metering. */
@Injectable()
export class CreateChatCompletion {
  constructor(
    private readonly router: LlmRouter,
    private readonly tokenizer: Tokenizer,
    private readonly metering: MeteringService,
    private readonly config: GatewayConfig,
  ) {}

  /**
   * The call's answer: the completion as JSON, or its event stream. `shape`: answer in another API's shape
   * (see ChatAnswerShape); `body` is then built by that API's translation. A failure before the answer
   * starts is thrown as a catalog error.
   */
  async handle(
    principal: Principal,
    body: ChatCompletionRequest,
    ctx: CallContext,
    shape?: ChatAnswerShape,
  ): Promise<CallAnswer> {
    try {
      const prepared = await this.prepare(principal, body, ctx);
      if (shape) prepared.endpoint = shape.endpoint;
      return body.stream ? await this.stream(prepared, body, ctx, shape) : await this.complete(prepared, ctx, shape);
    } catch (e) {
      throw toGatewayError(e);
    }
  }

  /** The checks a call passes before any work on its content: the key's chat scope, the model (known, a chat model, allowed for the key). */
  admit(principal: Principal, model: string): { claims: ApiKeyClaims; info: ModelInfo } {
    const claims: ApiKeyClaims = assertScope(principal, 'chat');
    const info = this.router.modelInfo(model);
    if (!info) throw new GatewayError(GatewayErrorCode.ModelNotFound, { model });
    if (info.kind !== 'chat') throw new GatewayError(GatewayErrorCode.ModelKindMismatch, { model, expected: 'chat' });
    assertModel(claims, model);
    return { claims, info };
  }

  /**
   * admit, and for a caller about to load stored data before the reservation (which needs the content
   * counted: CreateResponse) also that a deployment serves the model and that a key with a budget has some
   * left (429 insufficient_quota). A plain call learns both later, after its prompt is counted (a prompt
   * past the context length is refused as such first).
   */
  async admitBeforeLoading(principal: Principal, model: string): Promise<void> {
    const { claims } = this.admit(principal, model);
    if (!this.router.isServed(model)) throw new GatewayError(GatewayErrorCode.NoProvider, { model });
    if (claims.hasBudget && (await this.metering.remaining(principal)).exhausted)
      throw new GatewayError(GatewayErrorCode.InsufficientQuota);
  }

  private async prepare(principal: Principal, body: ChatCompletionRequest, ctx: CallContext): Promise<Prepared> {
    const { claims, info } = this.admit(principal, body.model);
    const features = assertPriced(body, info);
    // The hold prices every completion token at the dearer of the text and audio prices when audio
    // output is asked for (audio tokens are part of completion_tokens), every prompt token likewise when
    // the prompt has audio (chatCost in usage/pricing.ts bills those at audioInputPer1k), plus one web search call.
    const hold: Pick<ModelInfo, 'price'> = {
      price: {
        ...info.price,
        inputPer1k: features.audioInput
          ? Math.max(info.price.inputPer1k, info.price.audioInputPer1k ?? 0)
          : info.price.inputPer1k,
        outputPer1k: features.audioOutput
          ? Math.max(info.price.outputPer1k, info.price.audioOutputPer1k ?? 0)
          : info.price.outputPer1k,
      },
    };
    const searchHold = features.webSearch ? (info.price.webSearchPerCall ?? 0) : 0;

    // Counted with turns given to the event loop: a large body cannot hold it (test/ai-gateway/security-text.e2e-spec.ts).
    // Tool definitions, schemas and the bounds of image, audio and file parts count too (docs/ai-gateway/chat.md).
    const pace = this.tokenizer.pace(shareOf(principal), ctx.clientGone);
    const messageTokens = await this.tokenizer.countChatAsync(
      body.messages as unknown as CountedMessage[],
      info.encoding,
      info.contextLength,
      pace,
      info.imageTokens,
    );
    const promptTokens =
      messageTokens +
      (await this.tokenizer.countDefinitionsAsync(body, info.encoding, info.contextLength - messageTokens, pace));
    // Predicted output: OpenAI bills rejected prediction tokens as completion tokens, so they are held as such.
    const predictionTokens = body.prediction
      ? await this.tokenizer.countUpToAsync(predictionText(body.prediction), info.encoding, info.contextLength, pace)
      : 0;
    const requestedOut = body.max_completion_tokens ?? body.max_tokens;
    if (promptTokens + (requestedOut ?? 0) > info.contextLength) {
      throw new GatewayError(GatewayErrorCode.ContextLengthExceeded, {
        limit: info.contextLength,
        promptTokens,
        completionTokens: requestedOut ?? 0,
      });
    }
    if (!this.router.isServed(body.model)) throw new GatewayError(GatewayErrorCode.NoProvider, { model: body.model });
    let reserveOut =
      requestedOut ??
      Math.max(1, Math.min(this.config.AI_COMPLETION_RESERVE_TOKENS, info.contextLength - promptTokens));
    // Tokenizers differ between vendors: the prompt part of the hold gets a margin.
    const promptHold = Math.ceil(promptTokens * 1.1) + 16;
    const n = body.n ?? 1;
    const held = (out: number) => ({
      model: info.name,
      yuan: tokenCost(hold, { promptTokens: promptHold, completionTokens: out * n + predictionTokens }) + searchHold,
      tokens: promptHold + out * n + predictionTokens,
      headers: ctx.rateLimits,
      alive: ctx.alive,
    });
    let reservation: Reservation;
    try {
      reservation = await this.metering.reserve(principal, held(reserveOut));
    } catch (e) {
      // No max_tokens given and the budget cannot pay for the default: hold only what the remaining budget
      // can pay for (the answer is capped there). Asked only then: most calls fit at once, in one round trip.
      const capped =
        claims.hasBudget &&
        requestedOut === undefined &&
        hold.price.outputPer1k > 0 &&
        e instanceof GatewayError &&
        e.type === 'insufficient_quota';
      const budget = capped ? await this.metering.remaining(principal) : null;
      if (!budget || budget.yuan === null) throw e;
      const affordable = Math.floor(
        ((budget.yuan -
          searchHold -
          tokenCost(hold, { promptTokens: promptHold, completionTokens: predictionTokens }) -
          1e-9) *
          1000) /
          hold.price.outputPer1k /
          n,
      );
      if (affordable < 1 || affordable >= reserveOut) throw e;
      reserveOut = affordable;
      reservation = await this.metering.reserve(principal, held(reserveOut));
    }
    const upstream: UpstreamChatRequest = { ...(body as unknown as UpstreamChatRequest) };
    // include_usage is the gateway's to ask upstream (the client always asks); other stream options pass.
    delete upstream.stream_options;
    if (body.stream && body.stream_options?.include_obfuscation !== undefined)
      upstream.stream_options = {
        include_obfuscation: body.stream_options.include_obfuscation,
      } as UpstreamChatRequest['stream_options'];
    // The upstream gets exactly the completion limit that was reserved (test/ai-gateway/metering.e2e-spec.ts), also when the
    // caller sent none (never the upstream's own default length). It travels as max_completion_tokens;
    // each upstream client sends it under the one name its upstream honours (OpenAI type: the
    // deployment's completionLimitParam; Anthropic: max_tokens).
    upstream.max_completion_tokens = reserveOut;
    delete upstream.max_tokens;
    return { endpoint: ENDPOINT, info, promptTokens, upstream, reservation, features, reserveOut, n };
  }

  private async complete(p: Prepared, ctx: CallContext, shape?: ChatAnswerShape): Promise<JsonAnswer> {
    const timer = ctx.timer;
    const { value: result, deployment } = await meteredUpstreamCall(
      this.metering,
      p.reservation,
      ctx,
      this.facts(p),
      (opts) => this.router.chat({ ...p.upstream, stream: false }, opts),
    );
    const usage = await this.usageOf(result.usage, p, result.choices.map((c) => generatedText(c?.message)).join(''));
    result.usage = usage;
    conformChoices(result);
    const settling = this.metering.settle(p.reservation, this.outcome(p, ctx, 'ok', usage, deployment, 200));
    // Handled here too: with nothing held it floats across the answer's shaping (the Responses store), which may throw.
    settling.catch(() => undefined);
    // A held budget reservation is released before answering; with nothing held (no budget) the charge
    // is written while the answer goes out, keeping a database commit off the latency path (npm run bench).
    if (p.reservation.admitted) await settling;
    const answer = shape ? await shape.complete(result) : result;
    return { kind: 'json', body: answer, headers: [OVERHEAD_HEADER, timer.overheadMs()], settled: settling };
  }

  private async stream(
    p: Prepared,
    body: ChatCompletionRequest,
    ctx: CallContext,
    shape?: ChatAnswerShape,
  ): Promise<EventStreamAnswer> {
    const timer = ctx.timer;
    const wantsUsage = !shape && body.stream_options?.include_usage === true;
    const routed = await meteredUpstreamCall(this.metering, p.reservation, ctx, this.facts(p), (opts) =>
      this.router.chatStream({ ...p.upstream, stream: true }, opts),
    );
    const relayed = relayEvents(ctx.clientGone, routed.value, {
      wantsUsage,
      events: (chunk) => (shape ? shape.chunk(chunk) : [chunk]),
      generated: (choice) => generatedText(fieldOf(choice, 'delta')),
      usage: (upstream, delivered) => this.usageOf(upstream, p, delivered),
      end: (usage) => (shape ? shape.end(usage) : ['[DONE]']),
      failed: (error) => (shape ? shape.failed(error) : [{ error }]),
      settle: (status, usage, error) =>
        this.metering.settle(p.reservation, { ...this.outcome(p, ctx, status, usage, routed.deployment, 200), error }),
    });
    return { kind: 'stream', headers: { [OVERHEAD_HEADER]: timer.overheadMs() }, ...relayed };
  }

  /**
   * Upstream usage when it came (with its token details: audio tokens are billed from them); otherwise
   * our own count of the prompt and of the delivered text, and for audio output, which text cannot
   * measure, the completion tokens that were held, as audio.
   */
  private async usageOf(upstream: Usage | undefined | null, p: Prepared, deliveredText: string): Promise<Usage> {
    if (upstream && Number.isFinite(upstream.prompt_tokens) && Number.isFinite(upstream.completion_tokens)) {
      const usage: Usage = {
        prompt_tokens: upstream.prompt_tokens,
        completion_tokens: upstream.completion_tokens,
        total_tokens: upstream.prompt_tokens + upstream.completion_tokens,
      };
      // The breakdowns (cached, cache-written and reasoning tokens) ride along for the answer: the
      // Responses API reports them, and chat answers keep what the upstream said.
      const prompt = tokenCounts(upstream.prompt_tokens_details);
      let completion = tokenCounts(upstream.completion_tokens_details);
      // Audio output asked and the audio share not reported: text cannot tell it, so every completion
      // token is taken as audio (the dearer price the hold used) rather than billed as text.
      if (p.features.audioOutput && completion?.audio_tokens === undefined)
        completion = { ...completion, audio_tokens: usage.completion_tokens };
      if (prompt) usage.prompt_tokens_details = prompt;
      if (completion) usage.completion_tokens_details = completion;
      return usage;
    }
    const counted = await this.tokenizer.countUpToAsync(deliveredText, p.info.encoding, Infinity);
    if (p.features.audioOutput) {
      const held = Math.max(counted, p.reserveOut * p.n);
      return {
        prompt_tokens: p.promptTokens,
        completion_tokens: held,
        total_tokens: p.promptTokens + held,
        completion_tokens_details: { audio_tokens: held },
      };
    }
    return { prompt_tokens: p.promptTokens, completion_tokens: counted, total_tokens: p.promptTokens + counted };
  }

  private outcome(
    p: Prepared,
    ctx: CallContext,
    status: CallOutcome['status'],
    usage: Usage,
    provider: string | undefined,
    httpStatus: number,
  ): CallOutcome {
    return {
      endpoint: p.endpoint,
      model: p.info.name,
      provider,
      status,
      costYuan:
        status === 'failed'
          ? 0
          : chatCost(p.info, {
              promptTokens: usage.prompt_tokens,
              completionTokens: usage.completion_tokens,
              audioPromptTokens: tokensOf(usage.prompt_tokens_details?.audio_tokens),
              audioCompletionTokens: tokensOf(usage.completion_tokens_details?.audio_tokens),
              webSearchCalls: p.features.webSearch ? 1 : 0,
            }),
      promptTokens: usage.prompt_tokens,
      completionTokens: usage.completion_tokens,
      httpStatus,
      requestId: ctx.requestId,
    };
  }

  private facts(p: Prepared): LedgerFacts {
    return { endpoint: p.endpoint, model: p.info.name };
  }
}

/** The text a message or delta generated: content plus tool call names and arguments (legacy function_call too). */
function generatedText(message: unknown): string {
  if (!message || typeof message !== 'object') return '';
  const m = message as Record<string, unknown>;
  let out = typeof m.content === 'string' ? m.content : '';
  if (typeof m.refusal === 'string') out += m.refusal;
  const transcript = fieldOf(m.audio, 'transcript');
  if (typeof transcript === 'string') out += transcript;
  const calls: unknown[] = Array.isArray(m.tool_calls) ? m.tool_calls : [];
  for (const call of [...calls, m.function_call ? { function: m.function_call } : undefined]) {
    const f = fieldOf(call, 'function');
    const name = fieldOf(f, 'name');
    const args = fieldOf(f, 'arguments');
    if (typeof name === 'string') out += name;
    if (typeof args === 'string') out += args;
  }
  return out;
}

/**
 * OpenAI's answer always carries `message.refusal` and `choices[].logprobs` (null when none): the
 * openai SDK types them non-optional. OpenAI-compatible servers (vLLM, Ollama) and the Anthropic
 * translation (libs/llm/src/anthropic-client.ts) may leave them out: they are filled with null.
 */
function conformChoices(result: ChatCompletion): void {
  for (const choice of Array.isArray(result.choices) ? result.choices : []) {
    if (!isRecord(choice)) continue;
    const c = choice as Record<string, unknown>;
    if (!('logprobs' in c)) c.logprobs = null;
    if (isRecord(c.message) && !('refusal' in c.message)) (c.message as Record<string, unknown>).refusal = null;
  }
}

const isRecord = (v: unknown): v is Record<string, never> => typeof v === 'object' && v !== null && !Array.isArray(v);
/** A token count from an upstream's usage details: a finite number >= 0, else 0. */
const tokensOf = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) && v > 0 ? v : 0);

/** The numeric fields of an upstream's usage breakdown (`{cached_tokens, audio_tokens, ...}`), or undefined when it sent none. */
function tokenCounts(v: unknown): Record<string, number> | undefined {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return undefined;
  const out: Record<string, number> = {};
  for (const [k, n] of Object.entries(v)) if (typeof n === 'number' && Number.isFinite(n) && n >= 0) out[k] = n;
  return Object.keys(out).length ? out : undefined;
}

/** `v[key]` when `v` is an object (untyped upstream and request shapes), else undefined. */
function fieldOf(v: unknown, key: string): unknown {
  return typeof v === 'object' && v !== null ? (v as Record<string, unknown>)[key] : undefined;
}

/** The text of a `prediction` ({type: 'content', content: string | text parts}). */
function predictionText(prediction: unknown): string {
  const c = fieldOf(prediction, 'content');
  if (typeof c === 'string') return c;
  if (!Array.isArray(c)) return '';
  return c
    .map((p: unknown) => fieldOf(p, 'text'))
    .filter((t) => typeof t === 'string')
    .join('');
}
