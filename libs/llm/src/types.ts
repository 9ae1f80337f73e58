// OpenAI wire shapes the gateway speaks, plus the error type every upstream client throws.
import type { EmbeddingVector } from './embedding-vector';
import type { BulkPace } from './sliced-json';

export type ChatRole = 'system' | 'user' | 'assistant' | 'tool' | 'developer' | 'function';

// The OpenAI shapes below are documentation for code that wants them; the request and response
// interfaces keep `[k: string]: unknown` for these fields (messages.tool_calls, tool_call_id, tools,
// tool_choice, message.tool_calls, delta.tool_calls) so translation code can build them freely.

/** An assistant's call of a function tool (OpenAI Chat Completions). */
export interface ChatToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

/** A streamed piece of a tool call: the first carries id, type and name, later ones argument fragments. */
export interface ChatToolCallDelta {
  index: number;
  id?: string;
  type?: 'function';
  function?: { name?: string; arguments?: string };
}

/** A function tool definition (`tools[]`). */
export interface ChatTool {
  type: 'function';
  function: { name: string; description?: string; parameters?: Record<string, unknown>; strict?: boolean | null };
}

export type ChatToolChoice = 'none' | 'auto' | 'required' | { type: 'function'; function: { name: string } };

/** Content parts of a message (user: all; others: text). */
export type ChatContentPart =
  | { type: 'text'; text: string }
  | { type: 'image_url'; image_url: { url: string; detail?: 'auto' | 'low' | 'high' } }
  | { type: 'input_audio'; input_audio: { data: string; format: 'wav' | 'mp3' } }
  | { type: 'file'; file: { file_data?: string; file_id?: string; filename?: string } }
  | { type: 'refusal'; refusal: string };

export interface ChatMessage {
  role: ChatRole;
  content: string | null | Array<{ type: string; text?: string; [k: string]: unknown }>;
  name?: string;
  [k: string]: unknown;
}

export interface ChatCompletionRequest {
  model: string;
  messages: ChatMessage[];
  temperature?: number;
  top_p?: number;
  max_tokens?: number;
  max_completion_tokens?: number;
  n?: number;
  stop?: string | string[];
  stream?: boolean;
  stream_options?: { include_usage?: boolean };
  frequency_penalty?: number;
  presence_penalty?: number;
  user?: string;
  [k: string]: unknown;
}

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  /**
   * What the upstream said about its prompt tokens (OpenAI's chat usage; Anthropic's cache reads and
   * writes are mapped here): `cached_tokens` read from the prompt cache, `cache_write_tokens` written to
   * it, `audio_tokens` of audio input. All are part of `prompt_tokens`. Absent when the upstream said nothing.
   */
  prompt_tokens_details?: {
    cached_tokens?: number;
    cache_write_tokens?: number;
    audio_tokens?: number;
    [k: string]: unknown;
  };
  /** The completion tokens' breakdown (`reasoning_tokens`, `audio_tokens`, prediction tokens), part of `completion_tokens`; absent when unknown. */
  completion_tokens_details?: {
    reasoning_tokens?: number;
    audio_tokens?: number;
    accepted_prediction_tokens?: number;
    rejected_prediction_tokens?: number;
    [k: string]: unknown;
  };
}

export interface ChatCompletion {
  id: string;
  object: 'chat.completion';
  created: number;
  model: string;
  choices: Array<{
    index: number;
    message: { role: 'assistant'; content: string | null; [k: string]: unknown };
    finish_reason: string | null;
  }>;
  usage?: Usage;
  [k: string]: unknown;
}

export interface ChatCompletionChunk {
  id: string;
  object: 'chat.completion.chunk';
  created: number;
  model: string;
  choices: Array<{
    index: number;
    delta: { role?: 'assistant'; content?: string | null; [k: string]: unknown };
    finish_reason: string | null;
  }>;
  usage?: Usage | null;
  [k: string]: unknown;
}

export interface EmbeddingsRequest {
  model: string;
  /** Texts, or token arrays (ids of the model's encoding; OpenAI-type upstreams only, see LlmRouter.embeddings). */
  input: string | string[] | number[] | number[][];
  encoding_format?: 'float' | 'base64';
  dimensions?: number;
  user?: string;
}

export interface EmbeddingsResponse {
  object: 'list';
  model: string;
  /** Each vector as the client read it (EmbeddingVector). */
  data: Array<{ index: number; object: 'embedding'; embedding: EmbeddingVector }>;
  usage: { prompt_tokens: number; total_tokens: number };
  /**
   * When the vectors are views of the embeddings worker's shared buffer (CallOptions.vectorsOffThread): gives their
   * memory back. Call it once nothing reads them any more (the caller's answer written, or the call failed).
   */
  release?: () => void;
}

/** Per-call options every upstream client accepts. */
export interface CallOptions {
  signal?: AbortSignal;
  timeoutMs?: number;
  /** The API key the call is for: a local engine counts its work against that key's share (AI_ENGINE_MAX_CONCURRENT_PER_KEY). */
  key?: string;
  /**
   * The call's bulk pace (the gateway's Pace, turns shared out per key): a large answer (embeddings) is parsed
   * an item at a time, charged to it (parseSliced), not in one JSON.parse that holds the event loop.
   */
  pace?: BulkPace;
  /**
   * Embeddings: the exchange runs on the embeddings worker thread (vector-worker.ts) where the deployment can (an
   * OpenAI-type one asking base64), its vectors handed back in this form as views of a shared buffer, to be
   * released (EmbeddingsResponse.release). For answers of megabytes: their bytes never reach the main thread.
   */
  vectorsOffThread?: 'base64' | 'float';
}

/**
 * `busy`: no connection of the deployment's pool was free for the call's key within the call's timeout
 * (PoolShares): nothing was sent, and the deployment is not at fault (no cooldown).
 */
export type UpstreamErrorKind = 'http' | 'timeout' | 'network' | 'protocol' | 'busy';

/**
 * An upstream call that failed. `status` is the upstream HTTP status (0 when none was received);
 * `retryable` says whether another attempt (same or other deployment) may succeed.
 */
export class UpstreamError extends Error {
  constructor(
    message: string,
    readonly kind: UpstreamErrorKind,
    readonly status: number,
    readonly retryAfterMs?: number,
    /** The upstream's own OpenAI-style error body when it sent one. */
    readonly upstreamError?: { message?: string; type?: string; code?: string | null; param?: string | null },
    readonly deployment?: string,
  ) {
    super(message);
    this.name = 'UpstreamError';
  }

  get retryable(): boolean {
    if (this.kind !== 'http') return this.kind !== 'protocol';
    return this.status === 408 || this.status === 409 || this.status === 429 || this.status >= 500;
  }

  withDeployment(deployment: string): UpstreamError {
    return new UpstreamError(this.message, this.kind, this.status, this.retryAfterMs, this.upstreamError, deployment);
  }
}

/** A caller-side abort (client disconnected); never retried, never surfaced as an upstream failure. */
export class CallAbortedError extends Error {
  constructor() {
    super('call aborted by the client');
    this.name = 'CallAbortedError';
  }
}

/** Parses a Retry-After header value (seconds or HTTP date) into milliseconds. */
export function parseRetryAfter(value: string | string[] | undefined | null, now = Date.now()): number | undefined {
  const raw = Array.isArray(value) ? value[0] : value;
  if (raw == null || raw === '') return undefined;
  const seconds = Number(raw);
  if (Number.isFinite(seconds)) return Math.max(0, Math.round(seconds * 1000));
  const date = Date.parse(raw);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - now);
}

/**
 * Every top-level Chat Completions request field the gateway knows (OpenAI's API reference). Other
 * fields are "unknown": bounded by the gateway, then forwarded to or dropped for an OpenAI-type
 * upstream per its deployment's `unknownFields`; the Anthropic translation never sends them.
 */
export const KNOWN_CHAT_FIELDS = [
  'model',
  'messages',
  'audio',
  'frequency_penalty',
  'function_call',
  'functions',
  'logit_bias',
  'logprobs',
  'max_completion_tokens',
  'max_tokens',
  'metadata',
  'modalities',
  'n',
  'parallel_tool_calls',
  'prediction',
  'presence_penalty',
  'prompt_cache_key',
  'reasoning_effort',
  'response_format',
  'safety_identifier',
  'seed',
  'service_tier',
  'stop',
  'store',
  'stream',
  'stream_options',
  'temperature',
  'tool_choice',
  'tools',
  'top_logprobs',
  'top_p',
  'user',
  'verbosity',
  'web_search_options',
] as const;
