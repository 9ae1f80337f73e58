import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsInt, IsOptional, IsString, Max, MaxLength, Min, MinLength } from 'class-validator';

export const IMAGE_SIZES = ['256x256', '512x512', '1024x1024', '1792x1024', '1024x1792'] as const;
export const IMAGE_STYLES = ['realistic', 'artistic', 'anime'] as const;

export class GenerateImageRequest {
  @ApiProperty({ description: 'Image description', example: 'A lighthouse on a cliff at dawn' })
  @IsString()
  @MinLength(1)
  @MaxLength(4000)
  prompt: string;

  @ApiPropertyOptional({ enum: IMAGE_SIZES, default: '1024x1024' })
  @IsOptional()
  @IsIn(IMAGE_SIZES as unknown as string[])
  size?: string;

  @ApiPropertyOptional({ enum: IMAGE_STYLES, description: 'Added to the prompt sent upstream' })
  @IsOptional()
  @IsIn(IMAGE_STYLES as unknown as string[])
  style?: string;

  @ApiPropertyOptional({ minimum: 1, maximum: 4, default: 1 })
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(4)
  n?: number;
}

class GeneratedImage {
  @ApiProperty({ example: 'https://cdn.example.com/images/2026/11/22/5b7c....png' }) url: string;
  @ApiProperty({ example: 'A lighthouse on a cliff at dawn, photorealistic' }) revised_prompt: string;
}

export class GenerateImageResponse {
  @ApiProperty({ type: [GeneratedImage] }) images: GeneratedImage[];
}

/** OpenAI `POST /v1/images/generations` (alias, for the openai SDK). */
export class OpenAiImageGenerationRequest {
  @ApiProperty() @IsString() @MinLength(1) @MaxLength(4000) prompt: string;
  @ApiPropertyOptional() @IsOptional() @IsString() model?: string;
  @ApiPropertyOptional({ minimum: 1, maximum: 4 }) @IsOptional() @IsInt() @Min(1) @Max(4) n?: number;
  @ApiPropertyOptional({ enum: IMAGE_SIZES }) @IsOptional() @IsIn(IMAGE_SIZES as unknown as string[]) size?: string;
  @ApiPropertyOptional({ enum: ['url', 'b64_json'] }) @IsOptional() @IsIn(['url', 'b64_json']) response_format?: string;
  @ApiPropertyOptional({ description: 'vivid or natural (OpenAI), or realistic, artistic, anime' }) @IsOptional() @IsIn(['vivid', 'natural', ...IMAGE_STYLES]) style?: string;
  @ApiPropertyOptional() @IsOptional() @IsString() quality?: string;
  @ApiPropertyOptional() @IsOptional() @IsString() user?: string;
}
