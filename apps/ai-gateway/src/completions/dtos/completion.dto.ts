import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import {
  IsBoolean,
  IsInt,
  IsNumber,
  IsOptional,
  IsString,
  Length,
  Max,
  MaxLength,
  Min,
  ValidateBy,
  ValidateNested,
} from 'class-validator';
import { ChatShape } from '../../chat/dtos/chat-completion.dto';
import { IsStringOrStringArray } from '../../http/validators';

export const MAX_PROMPTS = 64;
export const MAX_PROMPT_TOKENS = 1_000_000;

/** OpenAI's prompt forms: a string, strings, a token array, or token arrays (each non-empty, bounded). */
function IsPrompt(): PropertyDecorator {
  const tokens = (v: unknown) =>
    Array.isArray(v) && v.length > 0 && v.length <= MAX_PROMPT_TOKENS && v.every((t) => Number.isInteger(t) && t >= 0);
  return ValidateBy({
    name: 'isPrompt',
    validator: {
      validate: (v: unknown) => {
        if (typeof v === 'string') return true;
        if (!Array.isArray(v) || v.length === 0) return false;
        if (v.every((t) => typeof t === 'number')) return tokens(v);
        return v.length <= MAX_PROMPTS && (v.every((p) => typeof p === 'string') || v.every(tokens));
      },
      defaultMessage: () =>
        `prompt must be a string, an array of 1 to ${MAX_PROMPTS} strings, an array of token ids, or an array of 1 to ${MAX_PROMPTS} token-id arrays`,
    },
  });
}

export class CompletionStreamOptions {
  @ApiPropertyOptional({ example: true }) @IsOptional() @IsBoolean() include_usage?: boolean;
}

export class CompletionRequest {
  @ApiProperty({ example: 'vendor-gpt-4' }) @IsString() @Length(1, 128) model: string;

  @ApiProperty({
    oneOf: [
      { type: 'string' },
      { type: 'array', items: { type: 'string' }, maxItems: MAX_PROMPTS },
      { type: 'array', items: { type: 'integer' } },
    ],
    example: 'Once upon a time',
  })
  @IsPrompt()
  prompt: string | string[] | number[] | number[][];

  @ApiPropertyOptional({
    minimum: 1,
    default: 16,
    example: 64,
    description:
      'Reserved in the budget (times prompts × max(n, best_of)) and sent upstream exactly; OpenAI default 16',
  })
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(Number.MAX_SAFE_INTEGER)
  max_tokens?: number;
  @ApiPropertyOptional({ minimum: 0, maximum: 2, example: 0.7 })
  @IsOptional()
  @IsNumber({ allowNaN: false, allowInfinity: false })
  @Min(0)
  @Max(2)
  temperature?: number;
  @ApiPropertyOptional({ minimum: 0, maximum: 1, example: 1 })
  @IsOptional()
  @IsNumber({ allowNaN: false, allowInfinity: false })
  @Min(0)
  @Max(1)
  top_p?: number;
  @ApiPropertyOptional({ minimum: 1, maximum: 8, default: 1 }) @IsOptional() @IsInt() @Min(1) @Max(8) n?: number;
  @ApiPropertyOptional({ minimum: 1, maximum: 8, default: 1 }) @IsOptional() @IsInt() @Min(1) @Max(8) best_of?: number;
  @ApiPropertyOptional({ example: false }) @IsOptional() @IsBoolean() stream?: boolean;
  @ApiPropertyOptional({ type: CompletionStreamOptions })
  @IsOptional()
  @ValidateNested()
  @Type(() => CompletionStreamOptions)
  stream_options?: CompletionStreamOptions;
  @ApiPropertyOptional({
    oneOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' }, maxItems: 4 }],
    example: ['\n'],
  })
  @IsOptional()
  @IsStringOrStringArray(4)
  stop?: string | string[];
  @ApiPropertyOptional({ example: false }) @IsOptional() @IsBoolean() echo?: boolean;
  @ApiPropertyOptional({ example: '' }) @IsOptional() @IsString() @MaxLength(100_000) suffix?: string;
  @ApiPropertyOptional({ minimum: 0, maximum: 5 }) @IsOptional() @IsInt() @Min(0) @Max(5) logprobs?: number;
  @ApiPropertyOptional({ minimum: -2, maximum: 2 })
  @IsOptional()
  @IsNumber({ allowNaN: false, allowInfinity: false })
  @Min(-2)
  @Max(2)
  frequency_penalty?: number;
  @ApiPropertyOptional({ minimum: -2, maximum: 2 })
  @IsOptional()
  @IsNumber({ allowNaN: false, allowInfinity: false })
  @Min(-2)
  @Max(2)
  presence_penalty?: number;
  @ApiPropertyOptional({ example: 42 }) @IsOptional() @IsInt() seed?: number;
  @ApiPropertyOptional({
    example: { '50256': -100 },
    description: 'Token id -> bias from -100 to 100, at most 1024 entries (the chat rule)',
  })
  @IsOptional()
  @ChatShape()
  logit_bias?: Record<string, number>;
  @ApiPropertyOptional({ maxLength: 256 }) @IsOptional() @IsString() @MaxLength(256) user?: string;
}

class CompletionChoice {
  @ApiProperty({ example: ' there was a fox.' }) text: string;
  @ApiProperty({ example: 0 }) index: number;
  @ApiProperty({ nullable: true, example: null }) logprobs: object | null;
  @ApiProperty({ example: 'stop', nullable: true }) finish_reason: string | null;
}

class CompletionUsage {
  @ApiProperty({ example: 4 }) prompt_tokens: number;
  @ApiProperty({ example: 6 }) completion_tokens: number;
  @ApiProperty({ example: 10 }) total_tokens: number;
}

export class CompletionResponse {
  @ApiProperty({ example: 'cmpl-8x3' }) id: string;
  @ApiProperty({ example: 'text_completion' }) object: string;
  @ApiProperty({ example: 1741476777 }) created: number;
  @ApiProperty({ example: 'vendor-gpt-4' }) model: string;
  @ApiProperty({ type: [CompletionChoice] }) choices: CompletionChoice[];
  @ApiProperty({ type: CompletionUsage }) usage: CompletionUsage;
}
