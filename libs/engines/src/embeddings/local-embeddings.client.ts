import { CallAbortedError, UnsupportedRequestError, UpstreamError } from '@app/llm';
import type {
  CallOptions,
  ChatCompletion,
  ChatCompletionChunk,
  EmbeddingsRequest,
  EmbeddingsResponse,
  LlmClient,
} from '@app/llm';
import { EngineAbortedError, EngineBusyError } from '../engine-limiter';
import { LOCAL_EMBEDDING_DIMENSIONS, TextEmbeddingEngine } from './text-embedding.engine';

/** Engine name to use in a `type: local` deployment of the providers file. */
export const LOCAL_EMBEDDINGS_ENGINE = 'use-lite-en';

/**
 * The in-process English embeddings engine behind the router's `LlmClient` interface, so a providers
 * file can serve a model from it (`type: local`, `engine: use-lite-en`). Embeddings only.
 */
export class LocalEmbeddingsClient implements LlmClient {
  constructor(private readonly engine: TextEmbeddingEngine = TextEmbeddingEngine.shared()) {}

  async embeddings(req: EmbeddingsRequest, opts: CallOptions = {}): Promise<EmbeddingsResponse> {
    if (req.dimensions !== undefined && req.dimensions !== LOCAL_EMBEDDING_DIMENSIONS) {
      throw new UnsupportedRequestError(
        `the local embeddings model has ${LOCAL_EMBEDDING_DIMENSIONS} dimensions and cannot shorten its vectors`,
        'dimensions',
      );
    }
    const inputs = Array.isArray(req.input) ? req.input : [req.input];
    // The router decodes token arrays to text for local deployments (LlmRouter.embeddings); ids never reach the engine.
    if (!inputs.every((s): s is string => typeof s === 'string'))
      throw new UnsupportedRequestError('the local embeddings engine takes text input only, not token arrays', 'input');
    let vectors: number[][];
    try {
      // The shared engine limiter's caps, the key's share included (one key cannot take every slot and
      // queue place from the other tenants' OCR, vision and speech); aborted with the request.
      vectors = await this.engine.embed(inputs, { key: opts.key, signal: opts.signal });
    } catch (e) {
      if (e instanceof EngineAbortedError) throw new CallAbortedError();
      // The replica's engine queue full looks like a busy upstream to the router: 503 with a retry hint
      // (another deployment may serve; when none does, the gateway answers 503 engine_busy from its code). The key's own share used up is the key's answer (429), never a
      // reason to cool the deployment down for every tenant.
      if (e instanceof EngineBusyError) {
        if (e.scope === 'key') throw e;
        throw new UpstreamError(e.message, 'http', 503, 1000, { code: 'engine_busy', message: e.message });
      }
      throw e;
    }
    // No usage: the gateway counts the tokens itself for a local model.
    return {
      object: 'list',
      model: req.model,
      data: vectors.map((embedding, index) => ({ index, object: 'embedding', embedding })),
    } as unknown as EmbeddingsResponse;
  }

  chat(): Promise<ChatCompletion> {
    return Promise.reject(new UnsupportedRequestError('the local engine serves embeddings only', 'model'));
  }

  chatStream(): Promise<AsyncIterable<ChatCompletionChunk>> {
    return Promise.reject(new UnsupportedRequestError('the local engine serves embeddings only', 'model'));
  }

  /** The engine is shared by the process; it outlives any one router. */
  async close(): Promise<void> {}
}

/** The `localEngines` a router gets in this build. */
export function localLlmEngines(): Record<string, LlmClient> {
  return { [LOCAL_EMBEDDINGS_ENGINE]: new LocalEmbeddingsClient() };
}
