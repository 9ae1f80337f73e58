import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { ArrayMaxSize, ArrayNotEmpty, IsArray, IsBoolean, IsIn, IsInt, IsNumber, IsObject, IsOptional, IsString, Length, Max, MaxLength, Min, ValidateNested } from 'class-validator';
import { IsStringOrStringArray } from '../../routing/validators';

export class ChatMessageDto {
  @ApiProperty({ enum: ['system', 'user', 'assistant'], example: 'user' })
  @IsIn(['system', 'user', 'assistant'])
  role: 'system' | 'user' | 'assistant';

  @ApiProperty({ example: 'Say hello in Chinese.' })
  @IsString()
  content: string;

  @ApiPropertyOptional({ example: 'alice', description: 'Optional participant name' })
  @IsOptional()
  @IsString()
  @Length(1, 64)
  name?: string;
}

export class StreamOptionsDto {
  @ApiPropertyOptional({ example: true, description: 'Send a last chunk with `usage` and no choices' })
  @IsOptional()
  @IsBoolean()
  include_usage?: boolean;
}

export class ChatCompletionRequest {
  @ApiProperty({ example: 'vendor-gpt-4-mini' })
  @IsString()
  @Length(1, 128)
  model: string;

  @ApiProperty({ type: [ChatMessageDto], example: [{ role: 'system', content: 'You are concise.' }, { role: 'user', content: 'Say hello in Chinese.' }] })
  @IsArray()
  @ArrayNotEmpty()
  @ArrayMaxSize(4096)
  @ValidateNested({ each: true })
  @Type(() => ChatMessageDto)
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
  @ValidateNested()
  @Type(() => StreamOptionsDto)
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

  @ApiPropertyOptional({ minimum: 1, maximum: 8, default: 1, description: 'Number of choices' })
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(8)
  n?: number;

  @ApiPropertyOptional({ oneOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' }, maxItems: 4 }], example: ['\n\n'] })
  @IsOptional()
  @IsStringOrStringArray(4)
  stop?: string | string[];

  @ApiPropertyOptional({ example: 42 })
  @IsOptional()
  @IsInt()
  seed?: number;

  @ApiPropertyOptional({ example: { type: 'json_object' }, description: 'Passed to the upstream as is' })
  @IsOptional()
  @IsObject()
  response_format?: Record<string, unknown>;

  @ApiPropertyOptional({ example: false, description: 'Passed to OpenAI-compatible upstreams; ignored by Anthropic ones' })
  @IsOptional()
  @IsBoolean()
  logprobs?: boolean;

  @ApiPropertyOptional({ minimum: 0, maximum: 20 })
  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(20)
  top_logprobs?: number;

  @ApiPropertyOptional({ example: { '50256': -100 }, description: 'Passed to OpenAI-compatible upstreams; ignored by Anthropic ones' })
  @IsOptional()
  @IsObject()
  logit_bias?: Record<string, number>;

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
  @ApiProperty({ example: '你好！' }) content: string;
}

class ChoiceDoc {
  @ApiProperty({ example: 0 }) index: number;
  @ApiProperty({ type: AssistantMessageDoc }) message: AssistantMessageDoc;
  @ApiProperty({ example: 'stop', enum: ['stop', 'length', 'content_filter', 'tool_calls'] }) finish_reason: string;
}

export class ChatCompletionResponse {
  @ApiProperty({ example: 'chatcmpl-9x8y7z' }) id: string;
  @ApiProperty({ example: 'chat.completion' }) object: 'chat.completion';
  @ApiProperty({ example: 1795400000 }) created: number;
  @ApiProperty({ example: 'vendor-gpt-4-mini' }) model: string;
  @ApiProperty({ type: [ChoiceDoc] }) choices: ChoiceDoc[];
  @ApiProperty({ type: UsageDoc }) usage: UsageDoc;
}
