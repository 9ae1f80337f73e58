// Client for any OpenAI-compatible server (OpenAI, DashScope compatible mode, DeepSeek, vLLM, Ollama).
import { UpstreamHttp } from './http';
import { BulkPace, byteCharger, parseSliced } from './sliced-json';
import { Base64Vector, EmbeddingVector, float32sOf } from './embedding-vector';
import { VECTORS_OFF_THREAD } from './vector-worker';
import { LlmClient } from './llm-client';
import {
  CompletionLimitParam,
  defaultCompletionLimitParam,
  Deployment,
  EmbeddingsEncoding,
  UnknownFieldsPolicy,
} from './providers-file';
import { parseSse } from './sse';
import { mapTransportError, upstreamErrorBody } from './http';
import { TextCompletion, TextCompletionRequest, TextCompletionsClient } from './text-completions';
import {
  CallOptions,
  ChatCompletion,
  ChatCompletionChunk,
  ChatCompletionRequest,
  EmbeddingsRequest,
  EmbeddingsResponse,
  KNOWN_CHAT_FIELDS,
  UpstreamError,
} from './types';

const KNOWN_FIELDS = new Set<string>(KNOWN_CHAT_FIELDS);

export class OpenAiCompatibleClient implements LlmClient, TextCompletionsClient {
  private readonly http: UpstreamHttp;

  constructor(
    private readonly deployment: Pick<Deployment, 'baseUrl' | 'apiKey' | 'headers' | 'timeoutMs' | 'connections'> & {
      connectionsPerKey?: number;
      streamUsage?: boolean;
      completionLimitParam?: CompletionLimitParam;
      unknownFields?: UnknownFieldsPolicy;
      embeddingsEncoding?: EmbeddingsEncoding;
    },
  ) {
    this.http = new UpstreamHttp({
      baseUrl: deployment.baseUrl!,
      connections: deployment.connections,
      connectionsPerKey: deployment.connectionsPerKey,
      timeoutMs: deployment.timeoutMs,
      headers: {
        ...(deployment.apiKey ? { authorization: `Bearer ${deployment.apiKey}` } : {}),
        ...deployment.headers,
      },
    });
  }

  /**
   * The completion limit goes upstream under exactly one name, the one this deployment honours: an
   * upstream that ignored the other would generate its default length past the budget hold
   * (docs/ai-gateway/keys-and-limits.md, Metering and budgets), and OpenAI refuses both at once.
   */
  private withLimit(req: ChatCompletionRequest): ChatCompletionRequest {
    const limit = req.max_completion_tokens ?? req.max_tokens;
    if (limit === undefined) return req;
    const param = this.deployment.completionLimitParam ?? defaultCompletionLimitParam(this.deployment.baseUrl);
    return param === 'max_tokens'
      ? { ...req, max_tokens: limit, max_completion_tokens: undefined }
      : { ...req, max_completion_tokens: limit, max_tokens: undefined };
  }

  /** The deployment's unknownFields policy: `drop` keeps only the known fields (the gateway checked their shape). */
  private withFieldPolicy(req: ChatCompletionRequest): ChatCompletionRequest {
    if (this.deployment.unknownFields !== 'drop') return req;
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(req)) if (KNOWN_FIELDS.has(k)) out[k] = req[k];
    return out as ChatCompletionRequest;
  }

  async chat(req: ChatCompletionRequest, opts: CallOptions = {}): Promise<ChatCompletion> {
    const { statusCode, body } = await this.http.callJson<ChatCompletion>(
      '/chat/completions',
      { ...this.withLimit(this.withFieldPolicy(req)), stream: false, stream_options: undefined },
      opts,
    );
    if (!body || !Array.isArray(body.choices))
      throw new UpstreamError('upstream chat response has no choices', 'protocol', statusCode);
    return body;
  }

  async chatStream(req: ChatCompletionRequest, opts: CallOptions = {}): Promise<AsyncIterable<ChatCompletionChunk>> {
    const limited = this.withLimit(this.withFieldPolicy(req));
    const payload =
      this.deployment.streamUsage === false
        ? { ...limited, stream: true, stream_options: undefined }
        : { ...limited, stream: true, stream_options: { ...(req.stream_options ?? {}), include_usage: true } };
    return this.streamJson<ChatCompletionChunk>('/chat/completions', payload, opts);
  }

  /** Legacy `/completions` knows only `max_tokens`: the reserved limit goes under that name. */
  async completions(req: TextCompletionRequest, opts: CallOptions = {}): Promise<TextCompletion> {
    const { statusCode, body } = await this.http.callJson<TextCompletion>(
      '/completions',
      { ...req, stream: false, stream_options: undefined },
      opts,
    );
    if (!body || !Array.isArray(body.choices))
      throw new UpstreamError('upstream completions response has no choices', 'protocol', statusCode);
    return body;
  }

  async completionsStream(req: TextCompletionRequest, opts: CallOptions = {}): Promise<AsyncIterable<TextCompletion>> {
    const payload =
      this.deployment.streamUsage === false
        ? { ...req, stream: true, stream_options: undefined }
        : { ...req, stream: true, stream_options: { ...(req.stream_options ?? {}), include_usage: true } };
    return this.streamJson<TextCompletion>('/completions', payload, opts);
  }

  /** POSTs a streamed call; yields its JSON events until `[DONE]`. */
  private async streamJson<T>(path: string, payload: unknown, opts: CallOptions): Promise<AsyncIterable<T>> {
    const res = await this.http.postJson(path, payload, opts);
    const timeoutMs = opts.timeoutMs ?? this.deployment.timeoutMs;
    return (async function* () {
      let done = false;
      try {
        for await (const event of parseSse(res.body)) {
          if (event.data === '[DONE]') {
            done = true;
            break;
          }
          if (event.data === '') continue;
          let chunk: { error?: unknown } | null;
          try {
            chunk = JSON.parse(event.data) as { error?: unknown } | null;
          } catch {
            throw new UpstreamError('upstream sent a stream event that is not JSON', 'protocol', 200);
          }
          if (chunk?.error) {
            const err = upstreamErrorBody(chunk.error);
            throw new UpstreamError(
              `upstream stream error: ${err?.message ?? 'unknown'}`,
              'protocol',
              200,
              undefined,
              err,
            );
          }
          yield chunk as T;
        }
      } catch (e) {
        throw mapTransportError(e, opts.signal, undefined, timeoutMs);
      } finally {
        if (!done) res.body.destroy();
        else res.body.resume();
      }
      if (!done) throw new UpstreamError('upstream stream ended before [DONE]', 'network', 200);
    })();
  }

  /**
   * Vectors (EmbeddingVector), whatever the caller's encoding_format: the upstream is asked in the deployment's
   * embeddingsEncoding (base64 is a quarter of the bytes to parse) and its answer, in either form, is read
   * back; the gateway encodes the caller's answer itself. In a large answer each base64 vector is kept as the
   * answer's bytes (Base64Vector), no string made of it.
   */
  async embeddings(req: EmbeddingsRequest, opts: CallOptions = {}): Promise<EmbeddingsResponse> {
    const encoding = this.deployment.embeddingsEncoding ?? 'float';
    const decoded = (statusCode: number) => (d: unknown) => {
      const item = d as { embedding?: unknown } | null;
      if (item && typeof item === 'object' && 'embedding' in item)
        item.embedding = vectorOf(item.embedding, statusCode);
      return d;
    };
    // Megabytes of base64 vectors: received, parsed and checked on the embeddings worker thread (vector-worker.ts).
    if (opts.vectorsOffThread && encoding === 'base64' && VECTORS_OFF_THREAD)
      return this.http.embeddingsOffThread(
        '/embeddings',
        { ...req, encoding_format: encoding },
        { ...opts, as: opts.vectorsOffThread },
      );
    const pace = opts.pace;
    const { statusCode, body } = await this.http.callJson<EmbeddingsResponse>(
      '/embeddings',
      { ...req, encoding_format: encoding },
      {
        ...opts,
        // Thousands of vectors: received a slice a turn, then parsed and decoded a vector at a time, on the call's
        // pace (sliced-json.ts).
        large: pace
          ? {
              from: LARGE_ANSWER_BYTES,
              read: readOn(pace),
              // The pieces as received, never joined: a base64 vector stays a view of the piece it came in (joining a
              // 17 MB answer copied it into a buffer as large, and that much memory outside the heap a call brought
              // the process's full collections sooner: bench/suites/noisy-neighbour.js, embeddings-large).
              parse: async (pieces, _size, statusCode) => {
                pace.idle?.();
                return parseSliced(pieces, 'data', pace, decoded(statusCode), 'embedding');
              },
            }
          : undefined,
      },
    );
    if (!body || !Array.isArray(body.data))
      throw new UpstreamError('upstream embeddings response has no data', 'protocol', statusCode);
    for (const d of body.data) {
      const v: unknown = d?.embedding;
      if (typeof v === 'string') d.embedding = vectorOf(v, statusCode) as EmbeddingVector;
    }
    return body;
  }

  close(): Promise<void> {
    return this.http.close();
  }
}

/**
 * The charge for the pieces of an answer as they arrive: receiving them is counted on the pace, but the time
 * between two pieces is mostly the network's (the loop idle), so none of it is reported as bulk work (Pace.idle).
 */
function readOn(pace: BulkPace): (bytes: number) => Promise<void> | undefined {
  const charge = byteCharger(pace);
  return (bytes) => {
    pace.idle?.();
    return charge(bytes);
  };
}

/** From this size an embeddings answer is parsed a vector at a time (parseSliced) when the call has a pace. */
const LARGE_ANSWER_BYTES = 64 * 1024;

/**
 * An answer's embedding as the gateway holds it: a base64 string decoded to float32 values, the bytes of a base64
 * string in a large answer kept as they are (parseSliced's raw member), anything else as it was (checked by the
 * caller). Base64 that is not, or not of whole float32 values, is a protocol error.
 */
function vectorOf(v: unknown, statusCode: number): unknown {
  if (Buffer.isBuffer(v)) {
    const kept = Base64Vector.of(v);
    if (kept) return kept;
    v = v.toString('latin1');
  }
  if (typeof v !== 'string') return v;
  const floats = float32sOf(v);
  if (floats instanceof Float32Array) return floats;
  throw new UpstreamError(
    floats === 'partial'
      ? 'upstream sent a base64 embedding that is not whole float32 values'
      : 'upstream sent an embedding that is not base64',
    'protocol',
    statusCode,
  );
}
