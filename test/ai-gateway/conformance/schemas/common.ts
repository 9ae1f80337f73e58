// Shapes shared by the operations, written from the facts of OpenAI's OpenAPI document (openai/openai-openapi,
// openapi.json, info.version 2.3.0): field names, types, required lists, enums. Our own schemas, not the spec's text.

export type Schema = Record<string, unknown>;

export const nullable = (s: Schema): Schema => ({ anyOf: [s, { type: 'null' }] });
export const int = { type: 'integer' } as const;
export const str = { type: 'string' } as const;

/** The error body of every non-2xx JSON answer: `{error: {message, type, param, code}}`, all four present. */
export const errorBody: Schema = {
  type: 'object',
  required: ['error'],
  properties: {
    error: {
      type: 'object',
      required: ['message', 'type', 'param', 'code'],
      properties: { message: str, type: str, param: nullable(str), code: nullable(str) },
    },
  },
};

/** Token usage of chat and legacy completions; the two detail objects are optional, their counts optional integers. */
export const completionUsage: Schema = {
  type: 'object',
  required: ['prompt_tokens', 'completion_tokens', 'total_tokens'],
  properties: {
    prompt_tokens: int,
    completion_tokens: int,
    total_tokens: int,
    prompt_tokens_details: { type: 'object', properties: { cached_tokens: int, audio_tokens: int } },
    completion_tokens_details: {
      type: 'object',
      properties: {
        reasoning_tokens: int,
        audio_tokens: int,
        accepted_prediction_tokens: int,
        rejected_prediction_tokens: int,
        text_tokens: int,
      },
    },
  },
};
