import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import {
  IsArray,
  IsBoolean,
  IsIn,
  IsInt,
  IsNumber,
  IsOptional,
  IsString,
  Length,
  Max,
  MaxLength,
  Min,
  ValidateBy,
  ValidationArguments,
} from 'class-validator';
import { IsStringOrStringArray } from '../../http/validators';
import { checkChatField, MAX_MESSAGES, MAX_PARTS, MAX_SCHEMA_DEPTH, MAX_TOOL_CALLS, MAX_TOOLS } from '../chat-shape';

/** A structured field checked by chat-shape.ts (same check the chat pipe runs first to name the exact path); completions reuse it. */
export function ChatShape(): PropertyDecorator {
  return ValidateBy({
    name: 'chatShape',
    validator: {
      validate: (v: unknown, args?: ValidationArguments) => checkChatField(args!.property, v) === null,
      defaultMessage: (args?: ValidationArguments) =>
        checkChatField(args!.property, args!.value)?.message ?? `${args?.property} is invalid`,
    },
  });
}

// ---- Swagger documentation of the message, part and tool shapes (validated by chat-shape.ts) ----

export class ImageUrlDoc {
  @ApiProperty({ example: 'https://example.com/cat.png', description: 'http(s) URL or `data:image/png;base64,...`' })
  url: string;
  @ApiPropertyOptional({ enum: ['auto', 'low', 'high'], example: 'auto' }) detail?: string;
}
export class InputAudioDoc {
  @ApiProperty({ example: 'UklGRiQAAABXQVZF...', description: 'Base64 audio' }) data: string;
  @ApiProperty({ enum: ['wav', 'mp3'], example: 'wav' }) format: string;
}
export class FileDoc {
  @ApiProperty({
    example: 'data:application/pdf;base64,JVBERi0xLjQK...',
    description: 'Inline file (base64 or data URL). `file_id` is refused: the gateway has no /v1/files',
  })
  file_data: string;
  @ApiPropertyOptional({ example: 'report.pdf' }) filename?: string;
}
export class ContentPartDoc {
  @ApiProperty({ enum: ['text', 'image_url', 'input_audio', 'file', 'refusal'], example: 'image_url' }) type: string;
  @ApiPropertyOptional({ example: 'What is in this picture?' }) text?: string;
  @ApiPropertyOptional({ type: ImageUrlDoc }) image_url?: ImageUrlDoc;
  @ApiPropertyOptional({ type: InputAudioDoc }) input_audio?: InputAudioDoc;
  @ApiPropertyOptional({ type: FileDoc }) file?: FileDoc;
}
export class FunctionCallDoc {
  @ApiProperty({ example: 'get_weather' }) name: string;
  @ApiProperty({ example: '{"city":"Paris"}', description: 'JSON text of the arguments' }) arguments: string;
}
export class ToolCallDoc {
  @ApiProperty({ example: 'call_abc123' }) id: string;
  @ApiProperty({ enum: ['function'], example: 'function' }) type: 'function';
  @ApiProperty({ type: FunctionCallDoc }) function: FunctionCallDoc;
}
export class ChatMessageDto {
  @ApiProperty({ enum: ['developer', 'system', 'user', 'assistant', 'tool', 'function'], example: 'user' })
  role: 'developer' | 'system' | 'user' | 'assistant' | 'tool' | 'function';

  @ApiPropertyOptional({
    oneOf: [
      { type: 'string' },
      { type: 'array', maxItems: MAX_PARTS, items: { $ref: '#/components/schemas/ContentPartDoc' } },
    ],
    nullable: true,
    example: [
      { type: 'text', text: 'What is in this picture?' },
      { type: 'image_url', image_url: { url: 'https://example.com/cat.png', detail: 'low' } },
    ],
    description:
      'A string or content parts (user: text, image_url, input_audio, file; assistant: text, refusal; others: text). Null or absent on an assistant turn with tool_calls.',
  })
  content?: string | null | ContentPartDoc[];

  @ApiPropertyOptional({
    example: 'alice',
    description: 'Optional participant name (the function name for role `function`)',
  })
  name?: string;

  @ApiPropertyOptional({
    type: [ToolCallDoc],
    maxItems: MAX_TOOL_CALLS,
    description: 'Assistant only: the tool calls the model made',
  })
  tool_calls?: ToolCallDoc[];

  @ApiPropertyOptional({
    example: 'call_abc123',
    description: 'Role `tool` only (required there): the call this result answers',
  })
  tool_call_id?: string;

  @ApiPropertyOptional({ type: FunctionCallDoc, description: 'Assistant only, legacy functions API' })
  function_call?: FunctionCallDoc;

  @ApiPropertyOptional({ nullable: true, description: 'Assistant only' })
  refusal?: string | null;
}

export class FunctionDefDoc {
  @ApiProperty({ example: 'get_weather', pattern: '^[A-Za-z0-9_-]{1,64}$' }) name: string;
  @ApiPropertyOptional({ example: 'Current weather of a city' }) description?: string;
  @ApiPropertyOptional({
    example: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
    description: `JSON schema, at most ${MAX_SCHEMA_DEPTH} levels deep`,
  })
  parameters?: Record<string, unknown>;
  @ApiPropertyOptional({ example: false }) strict?: boolean;
}
export class ToolDoc {
  @ApiProperty({ enum: ['function', 'custom'], example: 'function' }) type: string;
  @ApiProperty({ type: FunctionDefDoc }) function: FunctionDefDoc;
}

export class StreamOptionsDto {
  @ApiPropertyOptional({ example: true, description: 'Send a last chunk with `usage` and no choices' })
  include_usage?: boolean;

  @ApiPropertyOptional({ example: false, description: 'Passed to the upstream (OpenAI type)' })
  include_obfuscation?: boolean;
}

export class ChatCompletionRequest {
  @ApiProperty({ example: 'vendor-gpt-4-mini' })
  @IsString()
  @Length(1, 128)
  model: string;

  @ApiProperty({
    type: [ChatMessageDto],
    minItems: 1,
    maxItems: MAX_MESSAGES,
    example: [
      { role: 'developer', content: 'You are concise.' },
      { role: 'user', content: [{ type: 'text', text: 'Weather in Paris?' }] },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'call_abc123', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_abc123', content: '{"temperature_c":18}' },
    ],
  })
  @IsArray()
  @ChatShape()
  messages: ChatMessageDto[];

  @ApiPropertyOptional({ minimum: 0, maximum: 2, default: 1, example: 0.7 })
  @IsOptional()
  @IsNumber({ allowNaN: false, allowInfinity: false })
  @Min(0)
  @Max(2)
  temperature?: number;

  @ApiPropertyOptional({ minimum: 1, example: 256, description: 'Maximum generated tokens' })
  @IsOptional()
  @IsInt()
  @Min(1)
  max_tokens?: number;

  @ApiPropertyOptional({ minimum: 1, description: 'Newer name of max_tokens' })
  @IsOptional()
  @IsInt()
  @Min(1)
  max_completion_tokens?: number;

  @ApiPropertyOptional({ example: false, description: 'Stream the reply as server-sent events' })
  @IsOptional()
  @IsBoolean()
  stream?: boolean;

  @ApiPropertyOptional({ type: StreamOptionsDto })
  @IsOptional()
  @ChatShape()
  stream_options?: StreamOptionsDto;

  @ApiPropertyOptional({ minimum: 0, maximum: 1, example: 1 })
  @IsOptional()
  @IsNumber({ allowNaN: false, allowInfinity: false })
  @Min(0)
  @Max(1)
  top_p?: number;

  @ApiPropertyOptional({ minimum: -2, maximum: 2, example: 0 })
  @IsOptional()
  @IsNumber({ allowNaN: false, allowInfinity: false })
  @Min(-2)
  @Max(2)
  frequency_penalty?: number;

  @ApiPropertyOptional({ minimum: -2, maximum: 2, example: 0 })
  @IsOptional()
  @IsNumber({ allowNaN: false, allowInfinity: false })
  @Min(-2)
  @Max(2)
  presence_penalty?: number;

  @ApiPropertyOptional({
    minimum: 1,
    maximum: 8,
    default: 1,
    description: 'Number of choices (each reserved in the budget; Anthropic: 1 only)',
  })
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(8)
  n?: number;

  @ApiPropertyOptional({
    oneOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' }, maxItems: 4 }],
    example: ['\n\n'],
  })
  @IsOptional()
  @IsStringOrStringArray(4)
  stop?: string | string[];

  @ApiPropertyOptional({ example: 42 })
  @IsOptional()
  @IsInt()
  @Min(Number.MIN_SAFE_INTEGER)
  @Max(Number.MAX_SAFE_INTEGER)
  seed?: number;

  @ApiPropertyOptional({
    example: {
      type: 'json_schema',
      json_schema: {
        name: 'answer',
        schema: { type: 'object', properties: { city: { type: 'string' } } },
        strict: true,
      },
    },
    description: `{type: text | json_object | json_schema}; the schema at most ${MAX_SCHEMA_DEPTH} levels deep. Passed to the upstream as is`,
  })
  @IsOptional()
  @ChatShape()
  response_format?: Record<string, unknown>;

  @ApiPropertyOptional({ example: false, description: 'OpenAI-type upstreams only (Anthropic: 400)' })
  @IsOptional()
  @IsBoolean()
  logprobs?: boolean;

  @ApiPropertyOptional({ minimum: 0, maximum: 20, description: 'Needs logprobs: true' })
  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(20)
  top_logprobs?: number;

  @ApiPropertyOptional({
    example: { '50256': -100 },
    description: 'Token id -> bias from -100 to 100. Passed to OpenAI-type upstreams',
  })
  @IsOptional()
  @ChatShape()
  logit_bias?: Record<string, number>;

  @ApiPropertyOptional({
    type: [ToolDoc],
    maxItems: MAX_TOOLS,
    description: 'Function tools (or custom tools); the definitions count toward the prompt tokens',
  })
  @IsOptional()
  @ChatShape()
  tools?: ToolDoc[];

  @ApiPropertyOptional({
    oneOf: [
      { type: 'string', enum: ['none', 'auto', 'required'] },
      { type: 'object', example: { type: 'function', function: { name: 'get_weather' } } },
    ],
    example: 'auto',
    description:
      "'none' | 'auto' | 'required' | {type:'function', function:{name}} | {type:'allowed_tools', allowed_tools:{mode, tools}}",
  })
  @IsOptional()
  @ChatShape()
  tool_choice?: string | Record<string, unknown>;

  @ApiPropertyOptional({ example: true, description: 'Allow several tool calls in one turn (needs tools)' })
  @IsOptional()
  @IsBoolean()
  parallel_tool_calls?: boolean;

  @ApiPropertyOptional({ type: [FunctionDefDoc], maxItems: MAX_TOOLS, description: 'Legacy: use tools' })
  @IsOptional()
  @ChatShape()
  functions?: FunctionDefDoc[];

  @ApiPropertyOptional({
    oneOf: [
      { type: 'string', enum: ['none', 'auto'] },
      { type: 'object', example: { name: 'get_weather' } },
    ],
    description: 'Legacy: use tool_choice',
  })
  @IsOptional()
  @ChatShape()
  function_call?: string | { name: string };

  @ApiPropertyOptional({
    example: ['text', 'audio'],
    description:
      "Output modalities. 'audio' is served for models whose providers-file price declares audioOutputPer1k (audio tokens billed at it); for others it is a 400",
  })
  @IsOptional()
  @ChatShape()
  modalities?: string[];

  @ApiPropertyOptional({
    example: { voice: 'alloy', format: 'wav' },
    nullable: true,
    description:
      "Audio output parameters (with modalities ['text', 'audio']): models whose price declares audioOutputPer1k only; for others a 400",
  })
  @IsOptional()
  @ChatShape()
  audio?: Record<string, unknown>;

  @ApiPropertyOptional({
    example: { type: 'content', content: 'The previous version of the text' },
    description: 'Predicted output; its tokens are reserved as completion tokens',
  })
  @IsOptional()
  @ChatShape()
  prediction?: Record<string, unknown>;

  @ApiPropertyOptional({ enum: ['none', 'minimal', 'low', 'medium', 'high'], example: 'low' })
  @IsOptional()
  @IsIn(['none', 'minimal', 'low', 'medium', 'high'])
  reasoning_effort?: string;

  @ApiPropertyOptional({ enum: ['low', 'medium', 'high'], example: 'medium' })
  @IsOptional()
  @IsIn(['low', 'medium', 'high'])
  verbosity?: string;

  @ApiPropertyOptional({
    enum: ['auto', 'default', 'flex'],
    example: 'auto',
    description:
      "'priority' and 'scale' (priced above default upstream) are refused with 400: not metered by this gateway",
  })
  @IsOptional()
  @IsIn(['auto', 'default', 'flex', 'scale', 'priority'])
  service_tier?: string;

  @ApiPropertyOptional({ example: false })
  @IsOptional()
  @IsBoolean()
  store?: boolean;

  @ApiPropertyOptional({
    example: { session: 'abc' },
    description: 'Up to 16 string values (keys <= 64, values <= 512 characters)',
  })
  @IsOptional()
  @ChatShape()
  metadata?: Record<string, string>;

  @ApiPropertyOptional({ example: 'tenant-42-chat', maxLength: 1024 })
  @IsOptional()
  @IsString()
  @MaxLength(1024)
  prompt_cache_key?: string;

  @ApiPropertyOptional({ example: 'hashed-user-1234', maxLength: 256 })
  @IsOptional()
  @IsString()
  @MaxLength(256)
  safety_identifier?: string;

  @ApiPropertyOptional({
    example: { search_context_size: 'low' },
    nullable: true,
    description:
      'Web search: models whose providers-file price declares webSearchPerCall only (each such call costs it once); for others a 400',
  })
  @IsOptional()
  @ChatShape()
  web_search_options?: Record<string, unknown>;

  @ApiPropertyOptional({ example: 'user-1234', description: 'End-user id for abuse tracking' })
  @IsOptional()
  @IsString()
  @MaxLength(256)
  user?: string;
}

class UsageDoc {
  @ApiProperty({ example: 21 }) prompt_tokens: number;
  @ApiProperty({ example: 9 }) completion_tokens: number;
  @ApiProperty({ example: 30 }) total_tokens: number;
}

class AssistantMessageDoc {
  @ApiProperty({ example: 'assistant' }) role: 'assistant';
  @ApiProperty({ example: '你好！', nullable: true, description: 'Null when the model only called tools' }) content:
    string | null;
  @ApiPropertyOptional({ type: [ToolCallDoc], description: "The tool calls (finish_reason 'tool_calls')" })
  tool_calls?: ToolCallDoc[];
  @ApiPropertyOptional({ nullable: true }) refusal?: string | null;
}

class ChoiceDoc {
  @ApiProperty({ example: 0 }) index: number;
  @ApiProperty({ type: AssistantMessageDoc }) message: AssistantMessageDoc;
  @ApiProperty({ example: 'stop', enum: ['stop', 'length', 'content_filter', 'tool_calls'] }) finish_reason: string;
}

class ToolCallDeltaDoc {
  @ApiProperty({ example: 0 }) index: number;
  @ApiPropertyOptional({ example: 'call_abc123', description: 'First delta of a call only' }) id?: string;
  @ApiPropertyOptional({ example: 'function' }) type?: 'function';
  @ApiPropertyOptional({
    example: { arguments: '{"ci' },
    description: 'name in the first delta, then argument fragments',
  })
  function?: { name?: string; arguments?: string };
}

class DeltaDoc {
  @ApiPropertyOptional({ example: 'assistant' }) role?: 'assistant';
  @ApiPropertyOptional({ example: '你' }) content?: string | null;
  @ApiPropertyOptional({ type: [ToolCallDeltaDoc], description: 'Forwarded chunk by chunk as the upstream sends them' })
  tool_calls?: ToolCallDeltaDoc[];
}

class ChunkChoiceDoc {
  @ApiProperty({ example: 0 }) index: number;
  @ApiProperty({ type: DeltaDoc }) delta: DeltaDoc;
  @ApiProperty({ example: null, nullable: true, enum: ['stop', 'length', 'content_filter', 'tool_calls'] })
  finish_reason: string | null;
}

/** One `data:` event of a streamed answer. */
export class ChatCompletionChunkDoc {
  @ApiProperty({ example: 'chatcmpl-9x8y7z' }) id: string;
  @ApiProperty({ example: 'chat.completion.chunk' }) object: 'chat.completion.chunk';
  @ApiProperty({ example: 1795400000 }) created: number;
  @ApiProperty({ example: 'vendor-gpt-4-mini' }) model: string;
  @ApiProperty({ type: [ChunkChoiceDoc] }) choices: ChunkChoiceDoc[];
  @ApiPropertyOptional({ type: UsageDoc, nullable: true }) usage?: UsageDoc | null;
}

export class ChatCompletionResponse {
  @ApiProperty({ example: 'chatcmpl-9x8y7z' }) id: string;
  @ApiProperty({ example: 'chat.completion' }) object: 'chat.completion';
  @ApiProperty({ example: 1795400000 }) created: number;
  @ApiProperty({ example: 'vendor-gpt-4-mini' }) model: string;
  @ApiProperty({ type: [ChoiceDoc] }) choices: ChoiceDoc[];
  @ApiProperty({ type: UsageDoc }) usage: UsageDoc;
}
