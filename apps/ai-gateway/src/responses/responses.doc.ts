import { applyDecorators } from '@nestjs/common';
import { ApiBody, ApiHeader, ApiOkResponse, ApiOperation, ApiParam, ApiProduces, ApiQuery } from '@nestjs/swagger';
import { ResponseDeleted, ResponseInputItemList, ResponseObject, ResponsesRequest } from './dtos/responses.dto';
import { INPUT_ITEMS_DEFAULT_LIMIT, INPUT_ITEMS_MAX_LIMIT } from './stored-responses.service';

// The OpenAPI operations of /v1/responses (responses.controller.ts): descriptions, examples and answers.

const RESPONSE_ID = {
  name: 'response_id',
  description: 'A response this API key stored (POST /v1/responses with `store`, default true) that has not expired',
  example: 'resp_67ccd3a9da748190baa7f1570fe91ac6',
};
const INCLUDE = {
  name: 'include',
  required: false,
  isArray: true,
  type: String,
  description:
    'Accepted; nothing is added (the values name hosted-tool results, log probabilities and encrypted reasoning, which a chat upstream does not produce)',
};
const NOT_FOUND_NOTE = "An unknown, expired or another key's id is the same 404 (`Response with id '…' not found.`).";

const STORED_EXAMPLE = {
  id: 'resp_67ccd3a9da748190baa7f1570fe91ac6',
  object: 'response',
  created_at: 1741476777,
  status: 'completed',
  error: null,
  incomplete_details: null,
  instructions: 'You are concise.',
  max_output_tokens: 100,
  metadata: {},
  model: 'vendor-gpt-4',
  output: [
    {
      id: 'msg_67ccd3acc8d48190a77525dc6de64b41',
      type: 'message',
      status: 'completed',
      role: 'assistant',
      content: [{ type: 'output_text', text: '你好！', annotations: [], logprobs: [] }],
    },
  ],
  parallel_tool_calls: true,
  previous_response_id: null,
  reasoning: { effort: null, summary: null },
  store: true,
  temperature: 1,
  text: { format: { type: 'text' } },
  tool_choice: 'auto',
  tools: [],
  top_p: 1,
  truncation: 'disabled',
  usage: {
    input_tokens: 21,
    input_tokens_details: { cached_tokens: 0, cache_write_tokens: 0 },
    output_tokens: 3,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: 24,
  },
};

/** POST /v1/responses */
export const ApiCreateResponse = () =>
  applyDecorators(
    ApiOperation({
      summary: 'Create a model response (OpenAI Responses API subset)',
      description:
        'Runs on the chat upstreams (OpenAI and Anthropic deployments) with the chat scope, model list, budget and ledger (endpoint `responses`). ' +
        '`store` (default true, as OpenAI) keeps the response (input and output items) for AI_RESPONSES_STORE_TTL_HOURS, readable only by the same API key: ' +
        'later calls of that key may send `{type:"item_reference", id}` for its output items (msg_..., fc_...) and `previous_response_id`; an unknown, expired or other key\'s id is a 400 naming it. ' +
        '`conversation`, `prompt`, `background: true`, hosted tools and `file_id` / `file_url` inputs answer 400 naming the field and the alternative (docs/ai-gateway/responses.md). ' +
        'Fields the gateway does not know (`moderation`, `prompt_cache_options`, `context_management`, ...) are bounded and then forwarded to or dropped for the upstream per its deployment, as on chat. ' +
        "Read a stored response back with GET /v1/responses/{id} and /input_items, delete it with DELETE. The answer says `store: false` when nothing was stored (store: false, storing disabled, too large, or past the key's AI_RESPONSES_STORE_MAX_BYTES_PER_KEY). " +
        'With `stream: true` the answer is `text/event-stream`: `response.created`, `response.in_progress`, `response.output_item.added`, `response.content_part.added`, ' +
        '`response.output_text.delta`, `response.function_call_arguments.delta`, the matching `.done` events, then `response.completed` (or `response.incomplete`) with usage; each event has `sequence_number`. ' +
        'A failure after the stream started arrives as an `error` event followed by `response.failed`.',
    }),
    ApiProduces('application/json', 'text/event-stream'),
    ApiBody({
      type: ResponsesRequest,
      examples: {
        text: {
          value: {
            model: 'vendor-gpt-4',
            instructions: 'You are concise.',
            input: 'Say hello in Chinese.',
            max_output_tokens: 100,
          },
        },
        item_reference: {
          summary: 'tool loop referring to the stored function_call',
          value: {
            model: 'vendor-gpt-4',
            input: [
              { role: 'user', content: 'Weather in Paris?' },
              { type: 'item_reference', id: 'fc_67ccd3a9da748190baa7f1570fe91ac6' },
              { type: 'function_call_output', call_id: 'call_1', output: '{"temp_c":18}' },
            ],
          },
        },
        previous_response_id: {
          value: {
            model: 'vendor-gpt-4',
            previous_response_id: 'resp_67ccd3a9da748190baa7f1570fe91ac6',
            input: [{ type: 'function_call_output', call_id: 'call_1', output: '{"temp_c":18}' }],
          },
        },
        tools: {
          value: {
            model: 'vendor-claude-3',
            input: [
              { role: 'user', content: [{ type: 'input_text', text: 'Weather in Paris?' }] },
              { type: 'function_call', call_id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}' },
              { type: 'function_call_output', call_id: 'call_1', output: '{"temp_c":18}' },
            ],
            tools: [
              {
                type: 'function',
                name: 'get_weather',
                description: 'Current weather of a city',
                parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
              },
            ],
            stream: true,
          },
        },
      },
    }),
    ApiOkResponse({
      type: ResponseObject,
      description: 'The response object (or the event stream when `stream` is true)',
    }),
    ApiHeader({ name: 'Authorization', description: 'Bearer <API_KEY>', required: true }),
  );

/** GET /v1/responses/{response_id} */
export const ApiRetrieveResponse = () =>
  applyDecorators(
    ApiOperation({
      summary: 'Retrieve a stored model response',
      description:
        "The Response object as it was answered (status, output, usage, the request's echoed fields), while it is stored (AI_RESPONSES_STORE_TTL_HOURS). Chat scope. " +
        '`stream=true` (replaying the events) is refused with 400 (`param: stream`): only the finished response is kept; `starting_after`, `include` and `include_obfuscation` are accepted and change nothing. ' +
        NOT_FOUND_NOTE,
    }),
    ApiParam(RESPONSE_ID),
    ApiQuery(INCLUDE),
    ApiQuery({ name: 'stream', required: false, type: Boolean, description: 'Only false (true: 400)' }),
    ApiQuery({
      name: 'starting_after',
      required: false,
      type: Number,
      description: 'Accepted without stream; ignored',
    }),
    ApiOkResponse({
      type: ResponseObject,
      description: 'The stored response',
      content: { 'application/json': { example: STORED_EXAMPLE } },
    }),
    ApiHeader({ name: 'Authorization', description: 'Bearer <API_KEY>', required: true }),
  );

/** DELETE /v1/responses/{response_id} */
export const ApiDeleteResponse = () =>
  applyDecorators(
    ApiOperation({
      summary: 'Delete a stored model response',
      description:
        "Deletes the response with its input and output items (later `previous_response_id` / `item_reference` to it are 400) and frees its bytes from the key's AI_RESPONSES_STORE_MAX_BYTES_PER_KEY. Chat scope. " +
        NOT_FOUND_NOTE,
    }),
    ApiParam(RESPONSE_ID),
    ApiOkResponse({
      type: ResponseDeleted,
      content: {
        'application/json': {
          example: { id: 'resp_67ccd3a9da748190baa7f1570fe91ac6', object: 'response', deleted: true },
        },
      },
    }),
    ApiHeader({ name: 'Authorization', description: 'Bearer <API_KEY>', required: true }),
  );

/** GET /v1/responses/{response_id}/input_items */
export const ApiListInputItems = () =>
  applyDecorators(
    ApiOperation({
      summary: 'List the input items of a stored model response',
      description:
        "The input as it was sent upstream (`previous_response_id`'s items first, `item_reference`s expanded, `reasoning` items and fields the upstream never received left out), as item resources with `id` and `type`. " +
        'Input items get ids derived from the response id and their position (the same at every read). Cursor pagination: `limit` 1–100 (default 20), `order` `desc` (default) or `asc`, `after` an item id of this list; `has_more` says whether another page follows. ' +
        NOT_FOUND_NOTE,
    }),
    ApiParam(RESPONSE_ID),
    ApiQuery({
      name: 'limit',
      required: false,
      type: Number,
      description: `1 to ${INPUT_ITEMS_MAX_LIMIT}`,
      example: INPUT_ITEMS_DEFAULT_LIMIT,
    }),
    ApiQuery({ name: 'order', required: false, enum: ['asc', 'desc'], description: 'Default desc (last item first)' }),
    ApiQuery({
      name: 'after',
      required: false,
      type: String,
      description: 'An item id of this list: the page starts after it',
    }),
    ApiQuery(INCLUDE),
    ApiOkResponse({
      type: ResponseInputItemList,
      content: {
        'application/json': {
          example: {
            object: 'list',
            data: [
              {
                id: 'msg_3f1c9b2e7a6d5c4b3a29180f7e6d5c4b3a29180f00000000',
                type: 'message',
                role: 'user',
                status: 'completed',
                content: [{ type: 'input_text', text: 'Say hello in Chinese.' }],
              },
            ],
            first_id: 'msg_3f1c9b2e7a6d5c4b3a29180f7e6d5c4b3a29180f00000000',
            last_id: 'msg_3f1c9b2e7a6d5c4b3a29180f7e6d5c4b3a29180f00000000',
            has_more: false,
          },
        },
      },
    }),
    ApiHeader({ name: 'Authorization', description: 'Bearer <API_KEY>', required: true }),
  );
