import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsDefined, IsOptional, IsString, Length } from 'class-validator';

/** OpenAI `POST /v1/moderations`. `input` is checked by hand (moderation-input.ts): a string, strings, or text and image_url parts. */
export class ModerationRequest {
  @ApiProperty({
    oneOf: [
      { type: 'string' },
      { type: 'array', items: { type: 'string' } },
      {
        type: 'array',
        items: {
          oneOf: [
            {
              type: 'object',
              properties: { type: { type: 'string', enum: ['text'] }, text: { type: 'string' } },
              required: ['type', 'text'],
            },
            {
              type: 'object',
              properties: {
                type: { type: 'string', enum: ['image_url'] },
                image_url: { type: 'object', properties: { url: { type: 'string' } }, required: ['url'] },
              },
              required: ['type', 'image_url'],
            },
          ],
        },
      },
    ],
    description:
      'What to classify: a string, an array of strings (one result each), or an array of text and image_url parts (one result). Image URLs must be public http(s) URLs or data:image URLs; the gateway fetches them with the same guards as /v1/vision/recognize and sends the image bytes upstream.',
  })
  @IsDefined()
  input: unknown;

  @ApiPropertyOptional({
    example: 'omni-moderation-latest',
    default: 'omni-moderation-latest',
    description: 'A moderation model of the media catalog, served by an OpenAI-type deployment of the providers file',
  })
  @IsOptional()
  @IsString()
  @Length(1, 128)
  model?: string;
}

class ModerationResultDoc {
  @ApiProperty({ example: false }) flagged: boolean;
  @ApiProperty({ example: { hate: false, violence: false }, description: 'Category -> flagged' }) categories: Record<
    string,
    boolean
  >;
  @ApiProperty({ example: { hate: 0.0001, violence: 0.0002 }, description: 'Category -> score' })
  category_scores: Record<string, number>;
  @ApiProperty({
    example: { hate: ['text'], violence: ['text', 'image'] },
    description: 'Category -> input types the score applies to',
  })
  category_applied_input_types: Record<string, string[]>;
}

export class ModerationResponseDoc {
  @ApiProperty({ example: 'modr-0d9740456c391e43c445bf0f010940c7' }) id: string;
  @ApiProperty({ example: 'omni-moderation-latest' }) model: string;
  @ApiProperty({ type: [ModerationResultDoc] }) results: ModerationResultDoc[];
}
