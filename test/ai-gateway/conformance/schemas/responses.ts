// JSON Schemas (2020-12, for ajv's Ajv2020) of what /v1/responses answers: the Response object, the
// deletion object, the input item list and every stream event the gateway emits. Written from the
// facts the official OpenAI OpenAPI document states (field names, types, required lists, enums) in our
// own words; plain objects without $ref, so each can be compiled on its own or plugged into a harness.
//
// Relaxations (each noted once, where the schema differs from the spec's own):
// - first_id / last_id of an input item list may be null: the spec types them as strings but has no
//   answer for an empty page (a cursor past the last item), which has no first or last id.

import { nullable, Schema, str } from './common';

/** Counts and indexes here are never negative. */
const int = { type: 'integer', minimum: 0 } as const;

/** usage: every breakdown required since the spec of 2026-07-15. */
export const responseUsageSchema: Schema = {
  type: 'object',
  required: ['input_tokens', 'input_tokens_details', 'output_tokens', 'output_tokens_details', 'total_tokens'],
  properties: {
    input_tokens: int,
    input_tokens_details: {
      type: 'object',
      required: ['cached_tokens', 'cache_write_tokens'],
      properties: { cached_tokens: int, cache_write_tokens: int },
    },
    output_tokens: int,
    output_tokens_details: { type: 'object', required: ['reasoning_tokens'], properties: { reasoning_tokens: int } },
    total_tokens: int,
  },
};

const logProb: Schema = {
  type: 'object',
  required: ['token', 'logprob'],
  properties: { token: str, logprob: { type: 'number' } },
};

/** An `output_text` content part: annotations and logprobs are required arrays. */
export const outputTextPartSchema: Schema = {
  type: 'object',
  required: ['type', 'text', 'annotations', 'logprobs'],
  properties: {
    type: { const: 'output_text' },
    text: str,
    annotations: { type: 'array' },
    logprobs: { type: 'array', items: logProb },
  },
};

const refusalPart: Schema = {
  type: 'object',
  required: ['type', 'refusal'],
  properties: { type: { const: 'refusal' }, refusal: str },
};
const itemStatus = { enum: ['in_progress', 'completed', 'incomplete'] };

/** An assistant message in `output`. */
export const outputMessageSchema: Schema = {
  type: 'object',
  required: ['id', 'type', 'role', 'content', 'status'],
  properties: {
    id: str,
    type: { const: 'message' },
    role: { const: 'assistant' },
    status: itemStatus,
    content: { type: 'array', items: { anyOf: [outputTextPartSchema, refusalPart] } },
  },
};

/** A function call in `output` (id and status are optional in the spec's output shape; ours always has them). */
export const functionCallSchema: Schema = {
  type: 'object',
  required: ['type', 'call_id', 'name', 'arguments'],
  properties: {
    id: str,
    type: { const: 'function_call' },
    call_id: str,
    name: str,
    arguments: str,
    status: itemStatus,
  },
};

/** The output item kinds a chat upstream can produce. */
export const outputItemSchema: Schema = { anyOf: [outputMessageSchema, functionCallSchema] };

const functionTool: Schema = {
  type: 'object',
  required: ['type', 'name', 'strict', 'parameters'],
  properties: {
    type: { const: 'function' },
    name: str,
    description: nullable(str),
    parameters: nullable({ type: 'object' }),
    strict: nullable({ type: 'boolean' }),
  },
};

const toolChoice: Schema = {
  anyOf: [
    { enum: ['none', 'auto', 'required'] },
    { type: 'object', required: ['type', 'name'], properties: { type: { const: 'function' }, name: str } },
  ],
};

const textFormat: Schema = {
  anyOf: [
    { type: 'object', required: ['type'], properties: { type: { const: 'text' } } },
    { type: 'object', required: ['type'], properties: { type: { const: 'json_object' } } },
    {
      type: 'object',
      required: ['type', 'name', 'schema'],
      properties: {
        type: { const: 'json_schema' },
        name: str,
        schema: { type: 'object' },
        strict: nullable({ type: 'boolean' }),
        description: str,
      },
    },
  ],
};

const responseErrorCodes = [
  'server_error',
  'rate_limit_exceeded',
  'invalid_prompt',
  'data_residency_mismatch',
  'bio_policy',
  'vector_store_timeout',
  'invalid_image',
  'invalid_image_format',
  'invalid_base64_image',
  'invalid_image_url',
  'image_too_large',
  'image_too_small',
  'image_parse_error',
  'image_content_policy_violation',
  'invalid_image_mode',
  'image_file_too_large',
  'unsupported_image_media_type',
  'empty_image_file',
  'failed_to_download_image',
  'image_file_not_found',
];

/** The Response object (POST answers, GET retrieve, and the `response` of the lifecycle events). */
export const responseObjectSchema: Schema = {
  type: 'object',
  required: [
    'id',
    'object',
    'created_at',
    'error',
    'incomplete_details',
    'instructions',
    'model',
    'tools',
    'output',
    'parallel_tool_calls',
    'metadata',
    'tool_choice',
    'temperature',
    'top_p',
  ],
  properties: {
    id: str,
    object: { const: 'response' },
    created_at: { type: 'number' },
    completed_at: nullable({ type: 'number' }),
    status: { enum: ['completed', 'failed', 'in_progress', 'cancelled', 'queued', 'incomplete'] },
    error: nullable({
      type: 'object',
      required: ['code', 'message'],
      properties: { code: { enum: responseErrorCodes }, message: str },
    }),
    incomplete_details: nullable({
      type: 'object',
      properties: { reason: { enum: ['max_output_tokens', 'content_filter'] } },
    }),
    instructions: nullable({ anyOf: [str, { type: 'array' }] }),
    model: str,
    output: { type: 'array', items: outputItemSchema },
    output_text: nullable(str),
    usage: responseUsageSchema,
    parallel_tool_calls: { type: 'boolean' },
    previous_response_id: nullable(str),
    reasoning: nullable({
      type: 'object',
      properties: {
        effort: nullable({ enum: ['none', 'minimal', 'low', 'medium', 'high', 'xhigh'] }),
        summary: nullable({ enum: ['auto', 'concise', 'detailed'] }),
      },
    }),
    store: { type: 'boolean' },
    max_output_tokens: nullable({ type: 'integer' }),
    metadata: nullable({ type: 'object', additionalProperties: str }),
    temperature: nullable({ type: 'number', minimum: 0, maximum: 2 }),
    top_p: nullable({ type: 'number', minimum: 0, maximum: 1 }),
    text: {
      type: 'object',
      properties: { format: textFormat, verbosity: nullable({ enum: ['low', 'medium', 'high'] }) },
    },
    tool_choice: toolChoice,
    tools: { type: 'array', items: functionTool },
    truncation: nullable({ enum: ['auto', 'disabled'] }),
    user: str,
    service_tier: nullable({ enum: ['auto', 'default', 'flex', 'scale', 'priority', 'fast', 'ultrafast'] }),
  },
};

/** DELETE /v1/responses/{id} (the spec gives it by example only). */
export const deletedResponseSchema: Schema = {
  type: 'object',
  required: ['id', 'object', 'deleted'],
  properties: { id: str, object: { const: 'response' }, deleted: { const: true } },
};

const inputContentPart: Schema = {
  anyOf: [
    { type: 'object', required: ['type', 'text'], properties: { type: { const: 'input_text' }, text: str } },
    {
      type: 'object',
      required: ['type', 'detail'],
      properties: {
        type: { const: 'input_image' },
        image_url: nullable(str),
        file_id: nullable(str),
        detail: { enum: ['low', 'high', 'auto', 'original'] },
      },
    },
    {
      type: 'object',
      required: ['type'],
      properties: {
        type: { const: 'input_file' },
        file_id: nullable(str),
        filename: str,
        file_data: str,
        file_url: str,
      },
    },
  ],
};

/** An input item as listed: user/system/developer messages, assistant messages, calls and outputs, each with an id. */
export const inputItemResourceSchema: Schema = {
  anyOf: [
    {
      type: 'object',
      required: ['id', 'type', 'role', 'content'],
      properties: {
        id: str,
        type: { const: 'message' },
        role: { enum: ['user', 'system', 'developer'] },
        status: itemStatus,
        content: { type: 'array', items: inputContentPart },
      },
    },
    outputMessageSchema,
    { ...functionCallSchema, required: ['id', 'status', 'type', 'call_id', 'name', 'arguments'] },
    {
      type: 'object',
      required: ['id', 'status', 'type', 'call_id', 'output'],
      properties: {
        id: str,
        type: { const: 'function_call_output' },
        call_id: str,
        status: itemStatus,
        output: { anyOf: [str, { type: 'array' }] },
      },
    },
  ],
};

/** GET /v1/responses/{id}/input_items (first_id / last_id: see the relaxation above). */
export const inputItemListSchema: Schema = {
  type: 'object',
  required: ['object', 'data', 'has_more', 'first_id', 'last_id'],
  properties: {
    object: { const: 'list' },
    data: { type: 'array', items: inputItemResourceSchema },
    has_more: { type: 'boolean' },
    first_id: nullable(str),
    last_id: nullable(str),
  },
};

const event = (type: string, required: string[], properties: Schema): Schema => ({
  type: 'object',
  required: ['type', 'sequence_number', ...required],
  properties: { type: { const: type }, sequence_number: { type: 'integer', minimum: 0 }, ...properties },
});

const textAt = { item_id: str, output_index: int, content_index: int };
const contentPart: Schema = { anyOf: [outputTextPartSchema, refusalPart] };

/** The stream events the gateway emits, by `type`. */
export const responseStreamEventSchemas: Record<string, Schema> = {
  'response.created': event('response.created', ['response'], { response: responseObjectSchema }),
  'response.in_progress': event('response.in_progress', ['response'], { response: responseObjectSchema }),
  'response.completed': event('response.completed', ['response'], { response: responseObjectSchema }),
  'response.incomplete': event('response.incomplete', ['response'], { response: responseObjectSchema }),
  'response.failed': event('response.failed', ['response'], { response: responseObjectSchema }),
  'response.output_item.added': event('response.output_item.added', ['output_index', 'item'], {
    output_index: int,
    item: outputItemSchema,
  }),
  'response.output_item.done': event('response.output_item.done', ['output_index', 'item'], {
    output_index: int,
    item: outputItemSchema,
  }),
  'response.content_part.added': event(
    'response.content_part.added',
    ['item_id', 'output_index', 'content_index', 'part'],
    { ...textAt, part: contentPart },
  ),
  'response.content_part.done': event(
    'response.content_part.done',
    ['item_id', 'output_index', 'content_index', 'part'],
    { ...textAt, part: contentPart },
  ),
  'response.output_text.delta': event(
    'response.output_text.delta',
    ['item_id', 'output_index', 'content_index', 'delta', 'logprobs'],
    { ...textAt, delta: str, logprobs: { type: 'array', items: logProb } },
  ),
  'response.output_text.done': event(
    'response.output_text.done',
    ['item_id', 'output_index', 'content_index', 'text', 'logprobs'],
    { ...textAt, text: str, logprobs: { type: 'array', items: logProb } },
  ),
  'response.function_call_arguments.delta': event(
    'response.function_call_arguments.delta',
    ['item_id', 'output_index', 'delta'],
    { item_id: str, output_index: int, delta: str },
  ),
  'response.function_call_arguments.done': event(
    'response.function_call_arguments.done',
    ['item_id', 'name', 'output_index', 'arguments'],
    { item_id: str, name: str, output_index: int, arguments: str },
  ),
  error: event('error', ['code', 'message', 'param'], { code: nullable(str), message: str, param: nullable(str) }),
};

/** The schemas above by the conformance harness's names (`METHOD /path`, `...#event:<type>` for stream events). */
export const responsesSchemas: Record<string, Schema> = {
  'POST /v1/responses': responseObjectSchema,
  ...Object.fromEntries(
    Object.entries(responseStreamEventSchemas).map(([type, schema]) => [`POST /v1/responses#event:${type}`, schema]),
  ),
  'GET /v1/responses/{response_id}': responseObjectSchema,
  'DELETE /v1/responses/{response_id}': deletedResponseSchema,
  'GET /v1/responses/{response_id}/input_items': inputItemListSchema,
};
