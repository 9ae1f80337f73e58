import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsInt, IsOptional, IsString, Length, Max, MaxLength, Min } from 'class-validator';
import { IsEmbeddingsInput } from './embeddings-input.validator';

export const MAX_EMBEDDING_INPUTS = 2048;

export class EmbeddingsRequest {
  @ApiProperty({
    example: 'text-embedding-v3',
    enum: ['text-embedding-v3', 'text-embedding-v2', 'text-embedding-v3-small', 'text-embedding-v3-large'],
  })
  @IsString()
  @Length(1, 128)
  model: string;

  @ApiProperty({
    oneOf: [
      { type: 'string' },
      { type: 'array', items: { type: 'string' }, minItems: 1, maxItems: MAX_EMBEDDING_INPUTS },
      { type: 'array', items: { type: 'integer', minimum: 0 }, minItems: 1, maxItems: MAX_EMBEDDING_INPUTS },
      {
        type: 'array',
        items: { type: 'array', items: { type: 'integer', minimum: 0 }, minItems: 1 },
        minItems: 1,
        maxItems: MAX_EMBEDDING_INPUTS,
      },
    ],
    example: ['今天天气很好', 'The weather is nice today'],
    description:
      "Text, texts, a token array or token arrays (ids of the model's encoding); each input at most the model's limit (8192 tokens), token arrays at most 300000 tokens in all. Token arrays go as they are to OpenAI-type deployments and are decoded to text for the others.",
  })
  @IsEmbeddingsInput(MAX_EMBEDDING_INPUTS)
  input: string | string[] | number[] | number[][];

  @ApiPropertyOptional({
    enum: ['float', 'base64'],
    default: 'float',
    description: 'base64 is little-endian float32, as OpenAI sends it',
  })
  @IsOptional()
  @IsIn(['float', 'base64'])
  encoding_format?: 'float' | 'base64';

  @ApiPropertyOptional({ example: 256, description: 'Shorter vectors, for models that support it' })
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(8192)
  dimensions?: number;

  @ApiPropertyOptional({ example: 'user-1234' })
  @IsOptional()
  @IsString()
  @MaxLength(256)
  user?: string;
}

class EmbeddingDoc {
  @ApiProperty({ example: 0 }) index: number;
  @ApiProperty({ example: 'embedding' }) object: 'embedding';
  @ApiProperty({
    oneOf: [{ type: 'array', items: { type: 'number' } }, { type: 'string' }],
    example: [0.0123, -0.0456, 0.0789],
  })
  embedding: number[] | string;
}

class EmbeddingsUsageDoc {
  @ApiProperty({ example: 12 }) prompt_tokens: number;
  @ApiProperty({ example: 12 }) total_tokens: number;
}

export class EmbeddingsResponseDoc {
  @ApiProperty({ example: 'list' }) object: 'list';
  @ApiProperty({ example: 'text-embedding-v3' }) model: string;
  @ApiProperty({ type: [EmbeddingDoc] }) data: EmbeddingDoc[];
  @ApiProperty({ type: EmbeddingsUsageDoc }) usage: EmbeddingsUsageDoc;
}
