// OpenTelemetry GenAI semantic conventions for upstream calls: one CLIENT span per attempt the router
// makes (retries and fallbacks are siblings under whatever span is active: the incoming request's),
// plus the client metrics (operation duration, token usage, time to first chunk) handed to a sink.
//
// Only @opentelemetry/api is used here: with no SDK registered (tracing off, libs/platform/src/tracing.ts)
// the tracer is the API's no-op one, spans are non-recording and no attribute is computed beyond the
// few the span name and a sampler need.
import { Attributes, context, Span, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { performance } from 'perf_hooks';
import type { Deployment } from './providers-file';
import type { TextCompletion, TextCompletionRequest } from './text-completions';
import {
  CallAbortedError,
  ChatCompletion,
  ChatCompletionChunk,
  ChatCompletionRequest,
  EmbeddingsRequest,
  EmbeddingsResponse,
  Usage,
  UpstreamError,
} from './types';

/** `gen_ai.operation.name` values the router uses (the convention's well-known ones, `moderation` custom). */
export type GenAiOperation = 'chat' | 'text_completion' | 'embeddings' | 'moderation';

/** The convention attributes a metric point carries (`gen_ai.token.type` is added for token usage). */
export type GenAiMetricAttributes = Attributes;

/** Where the client metrics go (GenAiMetrics in libs/platform: Prometheus and, when configured, OTLP). */
export interface GenAiMetricsSink {
  /** `gen_ai.client.operation.duration`, seconds; `error.type` set when the attempt failed. */
  operationDuration(attributes: GenAiMetricAttributes, seconds: number): void;
  /** `gen_ai.client.token.usage` for one token type. */
  tokenUsage(attributes: GenAiMetricAttributes, type: 'input' | 'output', tokens: number): void;
  /** `gen_ai.client.operation.time_to_first_chunk`, seconds (streams only). */
  timeToFirstChunk(attributes: GenAiMetricAttributes, seconds: number): void;
}

export interface GenAiTelemetryOptions {
  metrics?: GenAiMetricsSink;
  /** Record message content (`gen_ai.input.messages`, `gen_ai.output.messages`) on spans; off by default (AI_OTEL_CAPTURE_CONTENT). */
  captureContent?: boolean;
}

/** Per deployment and model, computed once: what every attempt's span and metrics start with. */
export interface GenAiTarget {
  provider: string;
  upstreamModel: string;
  /** Public model name and deployment, in the gateway's own namespace. */
  publicModel: string;
  deployment: string;
  serverAddress?: string;
  serverPort?: number;
}

type AnyRequest = ChatCompletionRequest | TextCompletionRequest | EmbeddingsRequest | undefined;

const tracer = trace.getTracer('@app/llm');

/** `gen_ai.provider.name` from the deployment type (the convention's well-known values; `local` custom). */
export function genAiTarget(d: Deployment, upstreamModel: string, publicModel: string): GenAiTarget {
  const target: GenAiTarget = { provider: d.type, upstreamModel, publicModel, deployment: d.name };
  if (d.baseUrl) {
    try {
      const url = new URL(d.baseUrl);
      target.serverAddress = url.hostname.replace(/^\[(.*)\]$/, '$1');
      target.serverPort = url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;
    } catch {
      // The providers file validated the URL; nothing to record otherwise.
    }
  }
  return target;
}

/** `error.type` of a failed attempt: the upstream's HTTP status, else the failure's kind or class. */
export function genAiErrorType(e: unknown): string {
  if (e instanceof UpstreamError) return e.kind === 'http' && e.status > 0 ? String(e.status) : e.kind;
  if (e instanceof CallAbortedError) return 'cancelled';
  return e instanceof Error ? e.name : '_OTHER';
}

/**
 * One upstream attempt: its span (started at construction) and its metrics (recorded at end()).
 * The router ends it; a stream's attempt is ended by the stream wrapper (observeStream).
 */
export class GenAiAttempt {
  readonly span: Span;
  private readonly started = performance.now();
  private readonly recording: boolean;
  private responseModel?: string;
  private firstChunkSeconds?: number;
  private errorType?: string;
  private tokens?: { input?: number; output?: number };
  private ended = false;
  /** Stream state (kept only while recording, except usage which metrics need). */
  private finishReasons?: string[];
  private output?: string[];
  /** Set by observeStream: the stream, not the router, ends this attempt. */
  streaming = false;

  constructor(
    readonly operation: GenAiOperation,
    private readonly target: GenAiTarget,
    request: AnyRequest,
    attempt: number,
    private readonly opts: GenAiTelemetryOptions,
  ) {
    const attributes: Attributes = {
      'gen_ai.operation.name': operation,
      'gen_ai.provider.name': target.provider,
      'gen_ai.request.model': target.upstreamModel,
    };
    if (target.serverAddress !== undefined) {
      attributes['server.address'] = target.serverAddress;
      attributes['server.port'] = target.serverPort;
    }
    this.span = tracer.startSpan(`${operation} ${target.upstreamModel}`, { kind: SpanKind.CLIENT, attributes });
    this.recording = this.span.isRecording();
    if (!this.recording) return;
    this.span.setAttributes({
      'ai_gateway.model': target.publicModel,
      'ai_gateway.deployment': target.deployment,
      'ai_gateway.attempt': attempt,
    });
    if (request) this.span.setAttributes(requestAttributes(operation, request));
    if (opts.captureContent && request) {
      const input = inputMessages(operation, request);
      if (input) this.span.setAttribute('gen_ai.input.messages', JSON.stringify(input));
    }
  }

  /** Runs the upstream call with this attempt's span active (the HTTP client span nests under it). */
  run<T>(fn: () => Promise<T>): Promise<T> {
    return this.recording ? context.with(trace.setSpan(context.active(), this.span), fn) : fn();
  }

  /** A whole (non-streamed) answer. */
  response(res: ChatCompletion | TextCompletion | EmbeddingsResponse): void {
    this.responseModel = typeof res.model === 'string' ? res.model : undefined;
    this.usage(res.usage);
    if (!this.recording) return;
    const attributes: Attributes = {};
    if ('id' in res && typeof res.id === 'string') attributes['gen_ai.response.id'] = res.id;
    if (this.responseModel) attributes['gen_ai.response.model'] = this.responseModel;
    if (res.object !== 'list') {
      const choices: Array<{ finish_reason?: string | null }> = Array.isArray(res.choices) ? res.choices : [];
      attributes['gen_ai.response.finish_reasons'] = choices.map((c) => c?.finish_reason ?? '').filter((r) => r !== '');
      if (this.opts.captureContent)
        this.span.setAttribute('gen_ai.output.messages', JSON.stringify(outputMessages(res)));
    }
    this.span.setAttributes(attributes);
  }

  /** One streamed chunk: time to the first one, and the answer's id, model, finish reasons and usage as they come. */
  chunk(chunk: ChatCompletionChunk | TextCompletion): void {
    if (this.firstChunkSeconds === undefined) {
      this.firstChunkSeconds = (performance.now() - this.started) / 1000;
      if (typeof chunk.model === 'string') this.responseModel = chunk.model;
      if (this.recording) {
        this.span.setAttribute('gen_ai.response.time_to_first_chunk', this.firstChunkSeconds);
        if (typeof chunk.id === 'string') this.span.setAttribute('gen_ai.response.id', chunk.id);
      }
    }
    if (chunk.usage) this.usage(chunk.usage);
    if (!this.recording) return;
    for (const choice of Array.isArray(chunk.choices) ? chunk.choices : []) {
      if (!choice) continue;
      if (choice.finish_reason) (this.finishReasons ??= []).push(choice.finish_reason);
      if (this.opts.captureContent) {
        const text = 'text' in choice ? choice.text : 'delta' in choice ? choice.delta?.content : undefined;
        if (typeof text === 'string') {
          const output = (this.output ??= []);
          const i = choice.index ?? 0;
          output[i] = (output[i] ?? '') + text;
        }
      }
    }
  }

  get failed(): boolean {
    return this.errorType !== undefined;
  }

  fail(e: unknown): void {
    this.errorType = genAiErrorType(e);
    if (!this.recording) return;
    this.span.setAttribute('error.type', this.errorType);
    this.span.setStatus({ code: SpanStatusCode.ERROR, message: e instanceof Error ? e.message : String(e) });
  }

  /** Ends the span and records the metrics; later calls do nothing. */
  end(): void {
    if (this.ended) return;
    this.ended = true;
    const metrics = this.opts.metrics;
    if (this.recording) {
      if (this.streaming) {
        if (this.responseModel) this.span.setAttribute('gen_ai.response.model', this.responseModel);
        if (this.finishReasons) this.span.setAttribute('gen_ai.response.finish_reasons', this.finishReasons);
        if (this.output)
          this.span.setAttribute(
            'gen_ai.output.messages',
            JSON.stringify(
              this.output.map((text, i) => ({
                role: 'assistant',
                parts: [{ type: 'text', content: text }],
                finish_reason: this.finishReasons?.[i] ?? '',
              })),
            ),
          );
      }
      this.span.end();
    }
    if (!metrics) return;
    const attributes: Attributes = {
      'gen_ai.operation.name': this.operation,
      'gen_ai.provider.name': this.target.provider,
      'gen_ai.request.model': this.target.upstreamModel,
    };
    if (this.responseModel) attributes['gen_ai.response.model'] = this.responseModel;
    if (this.target.serverAddress !== undefined) {
      attributes['server.address'] = this.target.serverAddress;
      attributes['server.port'] = this.target.serverPort;
    }
    if (this.errorType) attributes['error.type'] = this.errorType;
    metrics.operationDuration(attributes, (performance.now() - this.started) / 1000);
    if (this.firstChunkSeconds !== undefined) metrics.timeToFirstChunk(attributes, this.firstChunkSeconds);
    if (!this.errorType && this.tokens) {
      // Token usage has no error.type: it is recorded for answers only.
      if (this.tokens.input !== undefined) metrics.tokenUsage(attributes, 'input', this.tokens.input);
      if (this.tokens.output !== undefined) metrics.tokenUsage(attributes, 'output', this.tokens.output);
    }
  }

  private usage(usage: Partial<Usage> | null | undefined): void {
    if (!usage || typeof usage !== 'object') return;
    const input = count(usage.prompt_tokens);
    const output = count(usage.completion_tokens);
    this.tokens = { input, output };
    if (!this.recording) return;
    const attributes: Attributes = {};
    if (input !== undefined) attributes['gen_ai.usage.input_tokens'] = input;
    if (output !== undefined) attributes['gen_ai.usage.output_tokens'] = output;
    const cached = count(usage.prompt_tokens_details?.cached_tokens);
    const written = count(usage.prompt_tokens_details?.cache_write_tokens);
    const reasoning = count(usage.completion_tokens_details?.reasoning_tokens);
    if (cached !== undefined) attributes['gen_ai.usage.cache_read.input_tokens'] = cached;
    if (written !== undefined) attributes['gen_ai.usage.cache_creation.input_tokens'] = written;
    if (reasoning !== undefined) attributes['gen_ai.usage.reasoning.output_tokens'] = reasoning;
    this.span.setAttributes(attributes);
  }
}

/**
 * An upstream stream observed by its attempt: first chunk, usage, the end (or failure) of the stream.
 * The attempt is marked as the stream's at once (a generator's body only runs at its first read).
 */
export function observeStream<T extends ChatCompletionChunk | TextCompletion>(
  upstream: AsyncIterable<T>,
  attempt: GenAiAttempt,
): AsyncIterable<T> {
  attempt.streaming = true;
  return observed(upstream, attempt);
}

async function* observed<T extends ChatCompletionChunk | TextCompletion>(
  upstream: AsyncIterable<T>,
  attempt: GenAiAttempt,
): AsyncIterable<T> {
  let done = false;
  try {
    for await (const chunk of upstream) {
      attempt.chunk(chunk);
      yield chunk;
    }
    done = true;
  } catch (e) {
    attempt.fail(e);
    throw e;
  } finally {
    // The consumer stopped early (client gone): the answer was not received whole.
    if (!done && !attempt.failed) attempt.fail(new CallAbortedError());
    attempt.end();
  }
}

const count = (v: unknown): number | undefined =>
  typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : undefined;

/** The convention's request attributes (parameters only, never content). */
function requestAttributes(operation: GenAiOperation, req: NonNullable<AnyRequest>): Attributes {
  const r = req as Record<string, unknown>;
  const out: Attributes = {};
  const num = (key: string, attr: string) => {
    const v = r[key];
    if (typeof v === 'number' && Number.isFinite(v)) out[attr] = v;
  };
  if (operation === 'embeddings') {
    if (typeof r.encoding_format === 'string') out['gen_ai.request.encoding_formats'] = [r.encoding_format];
    num('dimensions', 'gen_ai.embeddings.dimension.count');
    return out;
  }
  const maxTokens = r.max_completion_tokens ?? r.max_tokens;
  if (typeof maxTokens === 'number') out['gen_ai.request.max_tokens'] = maxTokens;
  num('temperature', 'gen_ai.request.temperature');
  num('top_p', 'gen_ai.request.top_p');
  num('top_k', 'gen_ai.request.top_k');
  num('frequency_penalty', 'gen_ai.request.frequency_penalty');
  num('presence_penalty', 'gen_ai.request.presence_penalty');
  num('seed', 'gen_ai.request.seed');
  if (typeof r.n === 'number' && r.n !== 1) out['gen_ai.request.choice.count'] = r.n;
  if (typeof r.stop === 'string') out['gen_ai.request.stop_sequences'] = [r.stop];
  else if (Array.isArray(r.stop))
    out['gen_ai.request.stop_sequences'] = r.stop.filter((s): s is string => typeof s === 'string');
  const format = (r.response_format as { type?: unknown } | undefined)?.type;
  if (format === 'json_object' || format === 'json_schema') out['gen_ai.output.type'] = 'json';
  else if (format === 'text') out['gen_ai.output.type'] = 'text';
  return out;
}

/** `gen_ai.input.messages` (opt-in): the convention's role + parts shape. */
function inputMessages(operation: GenAiOperation, req: NonNullable<AnyRequest>): unknown[] | undefined {
  if (operation === 'chat' && 'messages' in req && Array.isArray(req.messages)) {
    return (req.messages as ChatCompletionRequest['messages']).map((m) => ({
      role: m.role,
      parts: contentParts(m.content),
    }));
  }
  if (operation === 'text_completion' && 'prompt' in req) {
    const prompts = Array.isArray(req.prompt) ? req.prompt : [req.prompt];
    return prompts.map((p) => ({
      role: 'user',
      parts: [{ type: 'text', content: typeof p === 'string' ? p : JSON.stringify(p) }],
    }));
  }
  if (operation === 'embeddings' && 'input' in req) {
    const inputs = Array.isArray(req.input) ? req.input : [req.input];
    return inputs.map((p) => ({
      role: 'user',
      parts: [{ type: 'text', content: typeof p === 'string' ? p : JSON.stringify(p) }],
    }));
  }
  return undefined;
}

function contentParts(content: unknown): unknown[] {
  if (typeof content === 'string') return [{ type: 'text', content }];
  if (!Array.isArray(content)) return [];
  return content.map((p: { type?: string; text?: string }) =>
    p?.type === 'text' ? { type: 'text', content: p.text ?? '' } : { type: p?.type ?? 'unknown' },
  );
}

function outputMessages(res: ChatCompletion | TextCompletion): unknown[] {
  return (Array.isArray(res.choices) ? res.choices : []).map((c) => {
    const text = 'text' in c ? c.text : 'message' in c ? c.message?.content : null;
    return {
      role: 'assistant',
      parts: typeof text === 'string' ? [{ type: 'text', content: text }] : [],
      finish_reason: c?.finish_reason ?? '',
    };
  });
}
