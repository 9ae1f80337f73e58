import { completionUsage, int, nullable, Schema, str } from './common';

const toolCall: Schema = {
  type: 'object',
  required: ['id', 'type', 'function'],
  properties: {
    id: str,
    type: { const: 'function' },
    function: { type: 'object', required: ['name', 'arguments'], properties: { name: str, arguments: str } },
  },
};

const tokenLogprob: Schema = {
  type: 'object',
  required: ['token', 'logprob', 'bytes', 'top_logprobs'],
  properties: {
    token: str,
    logprob: { type: 'number' },
    bytes: nullable({ type: 'array', items: int }),
    top_logprobs: {
      type: 'array',
      items: {
        type: 'object',
        required: ['token', 'logprob', 'bytes'],
        properties: { token: str, logprob: { type: 'number' }, bytes: nullable({ type: 'array', items: int }) },
      },
    },
  },
};

const choiceLogprobs = nullable({
  type: 'object',
  required: ['content', 'refusal'],
  properties: {
    content: nullable({ type: 'array', items: tokenLogprob }),
    refusal: nullable({ type: 'array', items: tokenLogprob }),
  },
});

const finishReason = { enum: ['stop', 'length', 'tool_calls', 'content_filter', 'function_call'] };

/** The assistant message of a chat answer: role, content and refusal always present (content and refusal may be null). */
const message: Schema = {
  type: 'object',
  required: ['role', 'content', 'refusal'],
  properties: {
    role: { const: 'assistant' },
    content: nullable(str),
    refusal: nullable(str),
    tool_calls: { type: 'array', items: toolCall },
    annotations: { type: 'array', items: { type: 'object', required: ['type'], properties: { type: str } } },
    function_call: { type: 'object', required: ['name', 'arguments'], properties: { name: str, arguments: str } },
    audio: nullable({
      type: 'object',
      required: ['id', 'expires_at', 'data', 'transcript'],
      properties: { id: str, expires_at: int, data: str, transcript: str },
    }),
  },
};

const serviceTier = nullable({ enum: ['auto', 'default', 'flex', 'scale', 'priority'] });

const chatCompletion: Schema = {
  type: 'object',
  required: ['id', 'object', 'created', 'model', 'choices'],
  properties: {
    id: str,
    object: { const: 'chat.completion' },
    created: int,
    model: str,
    service_tier: serviceTier,
    system_fingerprint: str,
    choices: {
      type: 'array',
      items: {
        type: 'object',
        required: ['index', 'message', 'finish_reason', 'logprobs'],
        properties: { index: int, message, finish_reason: finishReason, logprobs: choiceLogprobs },
      },
    },
    usage: completionUsage,
  },
};

const delta: Schema = {
  type: 'object',
  properties: {
    role: { enum: ['developer', 'system', 'user', 'assistant', 'tool'] },
    content: nullable(str),
    refusal: nullable(str),
    tool_calls: {
      type: 'array',
      items: {
        type: 'object',
        required: ['index'],
        properties: {
          index: int,
          id: str,
          type: { const: 'function' },
          function: { type: 'object', properties: { name: str, arguments: str } },
        },
      },
    },
    function_call: { type: 'object', properties: { name: str, arguments: str } },
  },
};

/** One chunk of a streamed chat answer; `usage` only on the last one asked with include_usage, null or absent before. */
const chatChunk: Schema = {
  type: 'object',
  required: ['id', 'object', 'created', 'model', 'choices'],
  properties: {
    id: str,
    object: { const: 'chat.completion.chunk' },
    created: int,
    model: str,
    service_tier: serviceTier,
    system_fingerprint: str,
    choices: {
      type: 'array',
      items: {
        type: 'object',
        required: ['index', 'delta', 'finish_reason'],
        properties: { index: int, delta, finish_reason: nullable(finishReason), logprobs: choiceLogprobs },
      },
    },
    usage: nullable(completionUsage),
  },
};

export const chatSchemas: Record<string, Schema> = {
  'POST /v1/chat/completions': chatCompletion,
  'POST /v1/chat/completions#chunk': chatChunk,
};
