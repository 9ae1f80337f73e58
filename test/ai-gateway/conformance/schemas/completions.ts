import { completionUsage, int, nullable, Schema, str } from './common';

const logprobs = nullable({
  type: 'object',
  properties: {
    text_offset: { type: 'array', items: int },
    token_logprobs: { type: 'array', items: { type: 'number' } },
    tokens: { type: 'array', items: str },
    top_logprobs: { type: 'array', items: { type: 'object', additionalProperties: { type: 'number' } } },
  },
});

/** Legacy completions: the same object for the answer and for each streamed event (`object: text_completion`). */
const textCompletion: Schema = {
  type: 'object',
  required: ['id', 'object', 'created', 'model', 'choices'],
  properties: {
    id: str,
    object: { const: 'text_completion' },
    created: int,
    model: str,
    system_fingerprint: str,
    choices: {
      type: 'array',
      items: {
        type: 'object',
        required: ['index', 'text', 'logprobs', 'finish_reason'],
        properties: { index: int, text: str, logprobs, finish_reason: { enum: ['stop', 'length', 'content_filter'] } },
      },
    },
    usage: completionUsage,
  },
};

/** Streamed events carry finish_reason null until the last. */
const textCompletionEvent: Schema = {
  ...textCompletion,
  properties: {
    ...(textCompletion.properties as object),
    choices: {
      type: 'array',
      items: {
        type: 'object',
        required: ['index', 'text', 'finish_reason'],
        properties: {
          index: int,
          text: str,
          logprobs,
          finish_reason: nullable({ enum: ['stop', 'length', 'content_filter'] }),
        },
      },
    },
    usage: nullable(completionUsage),
  },
};

export const completionsSchemas: Record<string, Schema> = {
  'POST /v1/completions': textCompletion,
  'POST /v1/completions#chunk': textCompletionEvent,
};
