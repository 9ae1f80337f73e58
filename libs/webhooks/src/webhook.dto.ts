import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import {
  ArrayMaxSize,
  IsArray,
  IsBoolean,
  IsInt,
  IsOptional,
  IsString,
  IsUrl,
  Matches,
  Max,
  MaxLength,
  Min,
  ValidateIf,
} from 'class-validator';

const URL_OPTIONS = {
  protocols: ['http', 'https'],
  require_protocol: true,
  require_tld: false,
  allow_underscores: true,
};

export class CreateWebhookEndpointRequest {
  @ApiProperty({
    example: 'https://hooks.example.com/platform',
    description: 'http(s); must resolve to a public address unless WEBHOOK_ALLOWED_CIDRS names it',
  })
  @IsString()
  @MaxLength(2000)
  @IsUrl(URL_OPTIONS, { message: 'url must be an http(s) URL' })
  url: string;

  @ApiPropertyOptional({
    type: [String],
    nullable: true,
    example: ['key.created', 'key.revoked'],
    description: 'Event names to receive; null or absent: all events',
  })
  @IsOptional()
  @ValidateIf((_, v) => v !== null)
  @IsArray()
  @ArrayMaxSize(50)
  @IsString({ each: true })
  events?: string[] | null;

  @ApiPropertyOptional({ example: 'billing alerts', maxLength: 200 })
  @IsOptional()
  @IsString()
  @MaxLength(200)
  description?: string;
}

export class UpdateWebhookEndpointRequest {
  @ApiPropertyOptional({ example: 'https://hooks.example.com/platform-v2' })
  @IsOptional()
  @IsString()
  @MaxLength(2000)
  @IsUrl(URL_OPTIONS, { message: 'url must be an http(s) URL' })
  url?: string;

  @ApiPropertyOptional({
    type: [String],
    nullable: true,
    example: ['member.registered'],
    description: 'null: all events',
  })
  @IsOptional()
  @ValidateIf((_, v) => v !== null)
  @IsArray()
  @ArrayMaxSize(50)
  @IsString({ each: true })
  events?: string[] | null;

  @ApiPropertyOptional({ example: 'billing alerts' })
  @IsOptional()
  @IsString()
  @MaxLength(200)
  description?: string;

  @ApiPropertyOptional({
    example: true,
    description: 'Enable again after the endpoint was disabled for persistent failure (its pending deliveries resume)',
  })
  @IsOptional()
  @IsBoolean()
  enabled?: boolean;
}

export class ListWebhookDeliveriesQuery {
  @ApiPropertyOptional({ description: 'The next_cursor of the previous page', example: '120' })
  @IsOptional()
  @Matches(/^[1-9][0-9]{0,18}$/, { message: 'cursor must be a next_cursor this API answered' })
  cursor?: string;

  @ApiPropertyOptional({ default: 50, minimum: 1, maximum: 200 })
  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(200)
  limit?: number;
}

export class WebhookEndpointView {
  @ApiProperty({ example: '3f6d1c0e-8a4b-4c7e-9d2a-1b5e6f7a8c9d' })
  id: string;
  @ApiProperty({ example: 'https://hooks.example.com/platform' })
  url: string;
  @ApiProperty({ example: 'billing alerts' })
  description: string;
  @ApiProperty({ type: [String], nullable: true, example: ['key.created'] })
  events: string[] | null;
  @ApiProperty({ example: true })
  enabled: boolean;
  @ApiProperty({
    nullable: true,
    type: String,
    example: null,
    description: 'Why the endpoint was disabled (persistent delivery failure)',
  })
  disabled_reason: string | null;
  @ApiProperty({ example: '2026-11-20T08:15:30.123Z' })
  created_at: string;
  @ApiProperty({ example: '2026-11-20T08:15:30.123Z' })
  updated_at: string;
}

export class CreatedWebhookEndpointView extends WebhookEndpointView {
  @ApiProperty({
    example: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
    description: 'The signing secret, shown in this response only',
  })
  secret: string;
}

export class WebhookEndpointList {
  @ApiProperty({ type: [WebhookEndpointView] })
  data: WebhookEndpointView[];
}

export class WebhookDeliveryView {
  @ApiProperty({ example: '118' })
  id: string;
  @ApiProperty({
    example: 'msg_2b3c4d5e6f708192a3b4c5d6e7f80912',
    description: 'The webhook-id header of every attempt',
  })
  event_id: string;
  @ApiProperty({ example: 'key.created' })
  event_type: string;
  @ApiProperty({
    enum: ['pending', 'delivered', 'failed', 'paused'],
    example: 'delivered',
    description: 'paused: held while the endpoint is disabled; pending again when it is enabled',
  })
  status: string;
  @ApiProperty({ example: 1 })
  attempts: number;
  @ApiProperty({ nullable: true, type: Number, example: 204 })
  last_status: number | null;
  @ApiProperty({ nullable: true, type: String, example: null })
  last_error: string | null;
  @ApiProperty({ nullable: true, type: String, example: '2026-11-20T08:15:30.200Z' })
  last_attempt_at: string | null;
  @ApiProperty({ nullable: true, type: String, example: '2026-11-20T08:15:30.260Z' })
  next_attempt_at: string | null;
  @ApiProperty({ nullable: true, type: String, example: '2026-11-20T08:15:30.260Z' })
  delivered_at: string | null;
  @ApiProperty({ example: '2026-11-20T08:15:30.123Z' })
  created_at: string;
  @ApiProperty({
    type: 'object',
    additionalProperties: true,
    example: {
      type: 'key.created',
      timestamp: '2026-11-20T08:15:30.123Z',
      data: { id: '0b6f4a52-7d7e-4c1b-9a55-0a4c3f1d2e3f', name: 'demo' },
    },
  })
  payload: unknown;
}

export class WebhookDeliveryList {
  @ApiProperty({ type: [WebhookDeliveryView] })
  data: WebhookDeliveryView[];
  @ApiProperty({ nullable: true, type: String, example: '100' })
  next_cursor: string | null;
}
