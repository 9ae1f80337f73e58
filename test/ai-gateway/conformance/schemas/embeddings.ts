import { int, Schema, str } from './common';

export const embeddingsSchemas: Record<string, Schema> = {
  'POST /v1/embeddings': {
    type: 'object',
    required: ['object', 'model', 'data', 'usage'],
    properties: {
      object: { const: 'list' },
      model: str,
      data: {
        type: 'array',
        items: {
          type: 'object',
          required: ['index', 'object', 'embedding'],
          // float: numbers; base64: the little-endian float32 bytes as one string.
          properties: {
            index: int,
            object: { const: 'embedding' },
            embedding: { anyOf: [{ type: 'array', items: { type: 'number' } }, str] },
          },
        },
      },
      usage: {
        type: 'object',
        required: ['prompt_tokens', 'total_tokens'],
        properties: { prompt_tokens: int, total_tokens: int },
      },
    },
  },
};
