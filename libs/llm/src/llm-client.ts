// What the router needs from an upstream deployment, whatever protocol it speaks.
import {
  CallOptions,
  ChatCompletion,
  ChatCompletionChunk,
  ChatCompletionRequest,
  EmbeddingsRequest,
  EmbeddingsResponse,
} from './types';

export interface LlmClient {
  chat(req: ChatCompletionRequest, opts?: CallOptions): Promise<ChatCompletion>;
  /**
   * Resolves once the upstream accepted the call (status 2xx received), so failures before the first
   * byte can still be retried elsewhere; the iterable then yields chunks as they arrive and throws an
   * UpstreamError if the stream breaks off.
   */
  chatStream(req: ChatCompletionRequest, opts?: CallOptions): Promise<AsyncIterable<ChatCompletionChunk>>;
  embeddings(req: EmbeddingsRequest, opts?: CallOptions): Promise<EmbeddingsResponse>;
  close(): Promise<void>;
}
