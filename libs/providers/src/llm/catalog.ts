// Public model catalog: the contract's models with their limits and yuan prices (overridable per model).

export type ModelKind = 'chat' | 'embeddings';

export interface ModelPrice {
  /** Yuan per 1000 prompt (input) tokens. */
  inputPer1k: number;
  /** Yuan per 1000 completion (output) tokens; 0 for embeddings. */
  outputPer1k: number;
}

export interface ModelInfo {
  name: string;
  kind: ModelKind;
  /** Chat: context window in tokens. Embeddings: max tokens per input. */
  contextLength: number;
  /** Embeddings only: native vector size. */
  dimensions?: number;
  /** Tokenizer encoding used for counting (js-tiktoken encoding name). */
  encoding: 'cl100k_base' | 'o200k_base';
  price: ModelPrice;
  ownedBy: string;
}

/**
 * Contract tables (ai-platform-api.md). Chat prices are not in the contract: they default to 0 and
 * are meant to be set in the providers file (`models.<name>.price`).
 */
export const DEFAULT_MODELS: Record<string, ModelInfo> = {
  'vendor-gpt-4': { name: 'vendor-gpt-4', kind: 'chat', contextLength: 128_000, encoding: 'o200k_base', price: { inputPer1k: 0, outputPer1k: 0 }, ownedBy: 'vendor' },
  'vendor-gpt-4-mini': { name: 'vendor-gpt-4-mini', kind: 'chat', contextLength: 128_000, encoding: 'o200k_base', price: { inputPer1k: 0, outputPer1k: 0 }, ownedBy: 'vendor' },
  'vendor-claude-3': { name: 'vendor-claude-3', kind: 'chat', contextLength: 200_000, encoding: 'cl100k_base', price: { inputPer1k: 0, outputPer1k: 0 }, ownedBy: 'vendor' },
  'vendor-llama-70b': { name: 'vendor-llama-70b', kind: 'chat', contextLength: 32_000, encoding: 'cl100k_base', price: { inputPer1k: 0, outputPer1k: 0 }, ownedBy: 'vendor' },
  'text-embedding-v3': { name: 'text-embedding-v3', kind: 'embeddings', contextLength: 8192, dimensions: 1536, encoding: 'cl100k_base', price: { inputPer1k: 0.0001, outputPer1k: 0 }, ownedBy: 'vendor' },
  // v2 has no price in the contract table: priced like v3 until configured.
  'text-embedding-v2': { name: 'text-embedding-v2', kind: 'embeddings', contextLength: 8192, dimensions: 1536, encoding: 'cl100k_base', price: { inputPer1k: 0.0001, outputPer1k: 0 }, ownedBy: 'vendor' },
  'text-embedding-v3-small': { name: 'text-embedding-v3-small', kind: 'embeddings', contextLength: 8192, dimensions: 512, encoding: 'cl100k_base', price: { inputPer1k: 0.00005, outputPer1k: 0 }, ownedBy: 'vendor' },
  'text-embedding-v3-large': { name: 'text-embedding-v3-large', kind: 'embeddings', contextLength: 8192, dimensions: 3072, encoding: 'cl100k_base', price: { inputPer1k: 0.0002, outputPer1k: 0 }, ownedBy: 'vendor' },
};
