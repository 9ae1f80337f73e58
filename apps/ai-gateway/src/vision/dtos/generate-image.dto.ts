import { ApiHideProperty, ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsBoolean, IsIn, IsInt, IsOptional, IsString, Max, MaxLength, Min, MinLength } from 'class-validator';
import { IMAGE_QUALITIES } from '@app/llm';

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
  @IsIn(IMAGE_SIZES)
  size?: string;

  @ApiPropertyOptional({ enum: IMAGE_STYLES, description: 'Added to the prompt sent upstream' })
  @IsOptional()
  @IsIn(IMAGE_STYLES)
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

/** Sizes of the OpenAI alias: the contract's, gpt-image-1's (1536x1024, 1024x1536) and `auto` (the upstream model chooses). */
export const OPENAI_IMAGE_SIZES = [...IMAGE_SIZES, '1536x1024', '1024x1536', 'auto'] as const;

/** OpenAI `POST /v1/images/generations` (alias, for the openai SDK). */
export class OpenAiImageGenerationRequest {
  @ApiProperty() @IsString() @MinLength(1) @MaxLength(4000) prompt: string;
  @ApiPropertyOptional({
    example: 'gpt-image-1',
    description:
      'An image model of the media catalog (dall-e-2, dall-e-3, gpt-image-1, or the providers file `mediaModels`); default AI_IMAGES_MODEL',
  })
  @IsOptional()
  @IsString()
  @MaxLength(100)
  model?: string;
  @ApiPropertyOptional({ minimum: 1, maximum: 4 }) @IsOptional() @IsInt() @Min(1) @Max(4) n?: number;
  @ApiPropertyOptional({
    enum: OPENAI_IMAGE_SIZES,
    description: '`auto`: the upstream model chooses; reserved as 1792x1024 and billed by the size it answered',
  })
  @IsOptional()
  @IsIn(OPENAI_IMAGE_SIZES)
  size?: string;
  @ApiPropertyOptional({ enum: ['url', 'b64_json'] }) @IsOptional() @IsIn(['url', 'b64_json']) response_format?:
    'url' | 'b64_json';
  @ApiPropertyOptional({ description: 'vivid or natural (OpenAI), or realistic, artistic, anime' })
  @IsOptional()
  @IsIn(['vivid', 'natural', ...IMAGE_STYLES])
  style?: string;
  @ApiPropertyOptional({
    enum: [...IMAGE_QUALITIES],
    description:
      "dall-e-3: standard, hd; gpt-image-1: low, medium, high, auto. Passed to the upstream; priced by the model's qualityPrices where the providers file sets them.",
  })
  @IsOptional()
  @IsIn(IMAGE_QUALITIES)
  quality?: string;
  @ApiPropertyOptional({ enum: ['transparent', 'opaque', 'auto'], description: 'gpt-image-1 models' })
  @IsOptional()
  @IsIn(['transparent', 'opaque', 'auto'])
  background?: string;
  @ApiPropertyOptional({ enum: ['png', 'jpeg', 'webp'], description: 'gpt-image-1 models' })
  @IsOptional()
  @IsIn(['png', 'jpeg', 'webp'])
  output_format?: string;
  @ApiPropertyOptional({ minimum: 0, maximum: 100, description: 'gpt-image-1 models, jpeg and webp' })
  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(100)
  output_compression?: number;
  @ApiPropertyOptional({ enum: ['low', 'auto'], description: 'gpt-image-1 models' })
  @IsOptional()
  @IsIn(['low', 'auto'])
  moderation?: string;
  @ApiPropertyOptional() @IsOptional() @IsString() @MaxLength(256) user?: string;
  @ApiPropertyOptional({
    default: false,
    description:
      'GPT image models: server-sent events image_generation.partial_image and image_generation.completed, forwarded from the upstream (b64_json, not stored)',
  })
  @IsOptional()
  @IsBoolean()
  stream?: boolean;
  @ApiPropertyOptional({ minimum: 0, maximum: 3, description: 'With stream: partial images sent before the final one' })
  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(3)
  partial_images?: number;
}

const toBoolean = ({ value }: { value: unknown }) =>
  value === 'true' || value === true ? true : value === 'false' || value === false ? false : value;
const toNumber = ({ value }: { value: unknown }) =>
  typeof value === 'string' && value.trim() !== '' && Number.isFinite(Number(value)) ? Number(value) : value;

/** Most images one edit call takes (OpenAI's limit for GPT image models). */
export const MAX_EDIT_IMAGES = 16;

/** OpenAI `POST /v1/images/edits` form fields (multipart; the files arrive through multer). */
export class OpenAiImageEditRequest {
  @ApiProperty({
    oneOf: [
      { type: 'string', format: 'binary' },
      { type: 'array', items: { type: 'string', format: 'binary' }, maxItems: MAX_EDIT_IMAGES },
    ],
    description:
      "`image` (or `image[]`, as OpenAI's SDK sends several): PNG, JPEG or WebP, up to 16 for GPT image models, one square PNG for dall-e-2",
  })
  @IsOptional()
  image?: unknown;
  @ApiPropertyOptional({
    type: 'string',
    format: 'binary',
    description: 'PNG whose transparent areas mark where to edit; the same dimensions as the first image',
  })
  @IsOptional()
  mask?: unknown;
  /** OpenAI's JSON form of an edit (`images` by URL or file id): known, so it is refused by name (see the controller), never as an unknown property. */
  @ApiHideProperty() @IsOptional() images?: unknown;
  @ApiProperty({ maxLength: 32000 }) @IsString() @MinLength(1) @MaxLength(32000) prompt: string;
  @ApiPropertyOptional({
    example: 'gpt-image-1',
    description:
      'An image model of the media catalog (dall-e-2, gpt-image-1, or the providers file `mediaModels`); default AI_IMAGES_MODEL',
  })
  @IsOptional()
  @IsString()
  @MaxLength(100)
  model?: string;
  @ApiPropertyOptional({ minimum: 1, maximum: 10 })
  @IsOptional()
  @Transform(toNumber)
  @IsInt()
  @Min(1)
  @Max(10)
  n?: number;
  @ApiPropertyOptional({ enum: OPENAI_IMAGE_SIZES }) @IsOptional() @IsIn(OPENAI_IMAGE_SIZES) size?: string;
  @ApiPropertyOptional({
    enum: ['url', 'b64_json'],
    description: 'dall-e-2; GPT image models always answer b64_json upstream (url: stored and served under /cdn)',
  })
  @IsOptional()
  @IsIn(['url', 'b64_json'])
  response_format?: 'url' | 'b64_json';
  @ApiPropertyOptional({ enum: [...IMAGE_QUALITIES] }) @IsOptional() @IsIn(IMAGE_QUALITIES) quality?: string;
  @ApiPropertyOptional({ enum: ['transparent', 'opaque', 'auto'] })
  @IsOptional()
  @IsIn(['transparent', 'opaque', 'auto'])
  background?: string;
  @ApiPropertyOptional({ enum: ['png', 'jpeg', 'webp'] })
  @IsOptional()
  @IsIn(['png', 'jpeg', 'webp'])
  output_format?: string;
  @ApiPropertyOptional({ minimum: 0, maximum: 100 })
  @IsOptional()
  @Transform(toNumber)
  @IsInt()
  @Min(0)
  @Max(100)
  output_compression?: number;
  @ApiPropertyOptional({
    enum: ['high', 'low'],
    description: "GPT image models: how closely the input images' features are kept",
  })
  @IsOptional()
  @IsIn(['high', 'low'])
  input_fidelity?: string;
  @ApiPropertyOptional({
    default: false,
    description: 'GPT image models: server-sent events image_edit.partial_image and image_edit.completed',
  })
  @IsOptional()
  @Transform(toBoolean)
  @IsBoolean()
  stream?: boolean;
  @ApiPropertyOptional({ minimum: 0, maximum: 3 })
  @IsOptional()
  @Transform(toNumber)
  @IsInt()
  @Min(0)
  @Max(3)
  partial_images?: number;
  @ApiPropertyOptional() @IsOptional() @IsString() @MaxLength(256) user?: string;
}
