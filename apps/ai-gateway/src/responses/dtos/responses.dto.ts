// Swagger shapes of POST /v1/responses. The body is validated by responses-request.ts (items are a
// union of types that class-validator cannot tell apart), so these classes only document it.
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';

export class ResponsesFunctionTool {
  @ApiProperty({ enum: ['function'], example: 'function' }) type: 'function';
  @ApiProperty({ example: 'get_weather', maxLength: 64, pattern: '^[A-Za-z0-9_-]{1,64}$' }) name: string;
  @ApiPropertyOptional({ example: 'Current weather of a city' }) description?: string;
  @ApiPropertyOptional({
    example: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
    description: 'JSON schema (at most 32 levels deep)',
  })
  parameters?: object;
  @ApiPropertyOptional({ example: false }) strict?: boolean;
}

export class ResponsesRequest {
  @ApiProperty({ example: 'vendor-gpt-4' }) model: string;

  @ApiProperty({
    description:
      'A string (one user message) or up to 4096 items: messages `{role: user|assistant|system|developer, content: string | parts}` with parts `input_text`, `input_image` (`image_url`: URL or data URL), `input_file` (`file_data`), `output_text` (assistant); ' +
      '`{type:"function_call", call_id, name, arguments}`; `{type:"function_call_output", call_id, output}` (its function_call must come earlier); `{type:"item_reference", id}` for an output item (msg_..., fc_...) this API key stored and that has not expired (else 400 naming the item); `reasoning` items are ignored. Other item types: 400 naming the item.',
    oneOf: [{ type: 'string' }, { type: 'array', maxItems: 4096, items: { type: 'object' } }],
    example: [
      { role: 'user', content: [{ type: 'input_text', text: 'Weather in Paris?' }] },
      { type: 'function_call', call_id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}' },
      { type: 'function_call_output', call_id: 'call_1', output: '{"temp_c":18}' },
    ],
  })
  input: string | object[];

  @ApiPropertyOptional({ example: 'You are concise.', description: 'Sent as the first system message' })
  instructions?: string;
  @ApiPropertyOptional({
    type: [ResponsesFunctionTool],
    maxItems: 128,
    description: 'Function tools only (hosted tools: 400)',
  })
  tools?: ResponsesFunctionTool[];
  @ApiPropertyOptional({
    oneOf: [
      { type: 'string', enum: ['none', 'auto', 'required'] },
      { type: 'object', properties: { type: { enum: ['function'] }, name: { type: 'string' } } },
    ],
    example: 'auto',
  })
  tool_choice?: unknown;
  @ApiPropertyOptional({ example: true }) parallel_tool_calls?: boolean;
  @ApiPropertyOptional({
    minimum: 1,
    example: 256,
    description: 'Reserved in the budget and sent upstream as the exact completion limit',
  })
  max_output_tokens?: number;
  @ApiPropertyOptional({ minimum: 0, maximum: 2, example: 0.7 }) temperature?: number;
  @ApiPropertyOptional({ minimum: 0, maximum: 1, example: 1 }) top_p?: number;
  @ApiPropertyOptional({
    example: {
      format: {
        type: 'json_schema',
        name: 'answer',
        schema: { type: 'object', properties: { city: { type: 'string' } } },
        strict: true,
      },
    },
    description: '`format`: text, json_object or json_schema; `verbosity` accepted',
  })
  text?: object;
  @ApiPropertyOptional({ example: { effort: 'low' }, description: '`effort` goes upstream as reasoning_effort' })
  reasoning?: object;
  @ApiPropertyOptional({
    example: false,
    description: 'Server-sent events: response.created ... response.completed, each with sequence_number',
  })
  stream?: boolean;
  @ApiPropertyOptional({
    example: true,
    default: true,
    description:
      'Keep the response (input and output items) for AI_RESPONSES_STORE_TTL_HOURS, for item_reference and previous_response_id of the same API key; false stores nothing',
  })
  store?: boolean;
  @ApiPropertyOptional({ maxLength: 256 }) user?: string;
  @ApiPropertyOptional({
    nullable: true,
    example: 'resp_67ccd3a9da748190baa7f1570fe91ac6',
    description:
      "A response this API key stored: its input and output items come before `input` (its instructions do not). Unknown, expired or another key's: 400 naming it",
  })
  previous_response_id?: string | null;
}

export class ResponsesOutputText {
  @ApiProperty({ example: 'output_text' }) type: string;
  @ApiProperty({ example: 'It is 18 °C in Paris.' }) text: string;
  @ApiProperty({ example: [] }) annotations: unknown[];
  @ApiProperty({ example: [], description: 'Always empty: no log probabilities come through a chat upstream' })
  logprobs: unknown[];
}

export class ResponsesOutputItem {
  @ApiProperty({ enum: ['message', 'function_call'], example: 'message' }) type: string;
  @ApiProperty({ example: 'msg_67ccd3a9da748190baa7f1570fe91ac6' }) id: string;
  @ApiProperty({ example: 'completed' }) status: string;
  @ApiPropertyOptional({ example: 'assistant' }) role?: string;
  @ApiPropertyOptional({ type: [ResponsesOutputText] }) content?: ResponsesOutputText[];
  @ApiPropertyOptional({ example: 'call_1', description: 'function_call items' }) call_id?: string;
  @ApiPropertyOptional({ example: 'get_weather', description: 'function_call items' }) name?: string;
  @ApiPropertyOptional({ example: '{"city":"Paris"}', description: 'function_call items' }) arguments?: string;
}

export class ResponsesUsage {
  @ApiProperty({ example: 21 }) input_tokens: number;
  @ApiProperty({ example: 9 }) output_tokens: number;
  @ApiProperty({ example: 30 }) total_tokens: number;
  @ApiProperty({
    example: { cached_tokens: 0, cache_write_tokens: 0 },
    description:
      "Tokens read from (`cached_tokens`) and written to (`cache_write_tokens`) the upstream's prompt cache, as it reported them (Anthropic: cache reads / cache creation); 0 when unknown",
  })
  input_tokens_details: object;
  @ApiProperty({
    example: { reasoning_tokens: 0 },
    description: 'Reasoning tokens as the upstream reported them; 0 when unknown',
  })
  output_tokens_details: object;
}

export class ResponseObject {
  @ApiProperty({ example: 'resp_67ccd3a9da748190baa7f1570fe91ac6' }) id: string;
  @ApiProperty({ example: 'response' }) object: string;
  @ApiProperty({ example: 1741476777 }) created_at: number;
  @ApiProperty({ enum: ['completed', 'incomplete', 'failed', 'in_progress'], example: 'completed' }) status: string;
  @ApiProperty({
    nullable: true,
    example: null,
    description: '{reason: max_output_tokens | content_filter} when incomplete',
  })
  incomplete_details: object | null;
  @ApiProperty({ example: 'vendor-gpt-4' }) model: string;
  @ApiProperty({ type: [ResponsesOutputItem] }) output: ResponsesOutputItem[];
  @ApiPropertyOptional({
    type: ResponsesUsage,
    description: 'Absent while the response is in progress or when it failed',
  })
  usage?: ResponsesUsage;
  @ApiProperty({
    example: true,
    description:
      'Whether the response was stored (false when store: false was asked, storing is disabled, or the response was too large or could not be written)',
  })
  store: boolean;
  @ApiProperty({ nullable: true, example: null, description: 'The previous_response_id of the request' })
  previous_response_id: string | null;
}

export class ResponseDeleted {
  @ApiProperty({ example: 'resp_67ccd3a9da748190baa7f1570fe91ac6' }) id: string;
  @ApiProperty({ example: 'response' }) object: string;
  @ApiProperty({ example: true }) deleted: boolean;
}

export class ResponseInputItem {
  @ApiProperty({
    example: 'msg_8c2f6a0e1b7d4c3a9e5f2b1d0c8a7e6f5d4c3b2a00000000',
    description: "Derived from the response id and the item's position: the same at every read",
  })
  id: string;
  @ApiProperty({ enum: ['message', 'function_call', 'function_call_output'], example: 'message' }) type: string;
  @ApiPropertyOptional({ enum: ['user', 'assistant', 'system', 'developer'], example: 'user' }) role?: string;
  @ApiProperty({ example: 'completed' }) status: string;
  @ApiPropertyOptional({
    example: [{ type: 'input_text', text: 'Weather in Paris?' }],
    description: 'message items: input_text / input_image / input_file parts (assistant: one output_text part)',
  })
  content?: object[];
  @ApiPropertyOptional({ example: 'call_1', description: 'function_call and function_call_output items' })
  call_id?: string;
  @ApiPropertyOptional({ example: 'get_weather', description: 'function_call items' }) name?: string;
  @ApiPropertyOptional({ example: '{"city":"Paris"}', description: 'function_call items' }) arguments?: string;
  @ApiPropertyOptional({ example: '{"temp_c":18}', description: 'function_call_output items' }) output?: string;
}

export class ResponseInputItemList {
  @ApiProperty({ example: 'list' }) object: string;
  @ApiProperty({ type: [ResponseInputItem] }) data: ResponseInputItem[];
  @ApiProperty({
    nullable: true,
    type: String,
    example: 'msg_8c2f6a0e1b7d4c3a9e5f2b1d0c8a7e6f5d4c3b2a00000000',
    description: 'null on an empty page',
  })
  first_id: string | null;
  @ApiProperty({
    nullable: true,
    type: String,
    example: 'msg_8c2f6a0e1b7d4c3a9e5f2b1d0c8a7e6f5d4c3b2a00000000',
    description: 'null on an empty page; send it as `after` for the next page',
  })
  last_id: string | null;
  @ApiProperty({ example: false }) has_more: boolean;
}
