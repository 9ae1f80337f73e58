// Legacy text completions (OpenAI `POST /v1/completions`): served by OpenAI-type deployments only.
import type { LlmClient } from './llm-client';
import type { CallOptions, Usage } from './types';

export interface TextCompletionRequest {
  model: string;
  prompt: string | string[] | number[] | number[][];
  max_tokens?: number;
  n?: number;
  best_of?: number;
  stream?: boolean;
  stream_options?: { include_usage?: boolean };
  [k: string]: unknown;
}

/** A completion, or (streamed) one chunk of it: same object shape, `choices[].text` a fragment. */
export interface TextCompletion {
  id: string;
  object: 'text_completion';
  created: number;
  model: string;
  choices: Array<{ text: string; index: number; logprobs: unknown; finish_reason: string | null }>;
  usage?: Usage | null;
  [k: string]: unknown;
}

export interface TextCompletionsClient {
  completions(req: TextCompletionRequest, opts?: CallOptions): Promise<TextCompletion>;
  /** Resolves once the upstream accepted the call; the iterable throws an UpstreamError if the stream breaks off. */
  completionsStream(req: TextCompletionRequest, opts?: CallOptions): Promise<AsyncIterable<TextCompletion>>;
}

export function servesTextCompletions(client: LlmClient): client is LlmClient & TextCompletionsClient {
  const c = client as Partial<TextCompletionsClient>;
  return typeof c.completions === 'function' && typeof c.completionsStream === 'function';
}
