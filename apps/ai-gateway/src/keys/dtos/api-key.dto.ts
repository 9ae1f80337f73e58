import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import {
  ArrayMaxSize,
  IsArray,
  IsDateString,
  IsIn,
  IsInt,
  IsOptional,
  IsString,
  IsUUID,
  Length,
  Max,
  MaxLength,
  Min,
  ValidateIf,
} from 'class-validator';
import { LimitFieldsRequest, LimitFieldsResponse } from '../../limits/dtos/limit-fields.dto';
import { KEY_SCOPES } from '../key-scopes';

export class CreateApiKeyRequest extends LimitFieldsRequest {
  @ApiProperty({ example: 'demo', description: 'Label shown in lists' })
  @IsString()
  @Length(1, 100)
  name: string;

  @ApiPropertyOptional({
    example: ['chat', 'embeddings'],
    enum: KEY_SCOPES,
    isArray: true,
    description: 'Endpoint groups the key may call; omitted or null means all',
  })
  @IsOptional()
  @IsArray()
  @ArrayMaxSize(KEY_SCOPES.length)
  @IsIn(KEY_SCOPES, { each: true })
  scopes?: string[] | null;

  @ApiPropertyOptional({
    example: ['vendor-gpt-4-mini', 'text-embedding-v3'],
    description: 'Public model names the key may use; omitted or null means all',
  })
  @IsOptional()
  @IsArray()
  @ArrayMaxSize(200)
  @IsString({ each: true })
  @MaxLength(128, { each: true })
  models?: string[] | null;

  @ApiPropertyOptional({
    example: '3f0c9a52-6f3e-4a8e-9d51-2b1f6c0e7a10',
    nullable: true,
    description: 'The project the key belongs to (its limits and budgets bind the key too); null: none',
  })
  @ValidateIf((_, v) => v !== null && v !== undefined)
  @IsUUID()
  project_id?: string | null;

  @ApiPropertyOptional({
    example: '2027-01-01T00:00:00Z',
    description: 'Expiry (ISO 8601); omitted or null means never',
  })
  @IsOptional()
  @IsDateString({ strict: true })
  expires_at?: string | null;
}

/** Every field optional; `null` clears a limit. */
export class UpdateApiKeyRequest extends LimitFieldsRequest {
  @ApiPropertyOptional({ example: 'demo (renamed)' })
  // Not nullable: a name cannot be removed (null is refused, not skipped).
  @ValidateIf((_, v) => v !== undefined)
  @IsString()
  @Length(1, 100)
  name?: string;

  @ApiPropertyOptional({ example: ['chat'], enum: KEY_SCOPES, isArray: true, nullable: true })
  @ValidateIf((_, v) => v !== null && v !== undefined)
  @IsArray()
  @ArrayMaxSize(KEY_SCOPES.length)
  @IsIn(KEY_SCOPES, { each: true })
  scopes?: string[] | null;

  @ApiPropertyOptional({ example: ['vendor-gpt-4-mini'], nullable: true })
  @ValidateIf((_, v) => v !== null && v !== undefined)
  @IsArray()
  @ArrayMaxSize(200)
  @IsString({ each: true })
  @MaxLength(128, { each: true })
  models?: string[] | null;

  @ApiPropertyOptional({
    example: '3f0c9a52-6f3e-4a8e-9d51-2b1f6c0e7a10',
    nullable: true,
    description: 'The project the key belongs to (its limits and budgets bind the key too); null: none',
  })
  @ValidateIf((_, v) => v !== null && v !== undefined)
  @IsUUID()
  project_id?: string | null;

  @ApiPropertyOptional({ example: '2027-06-30T00:00:00Z', nullable: true })
  @ValidateIf((_, v) => v !== null && v !== undefined)
  @IsDateString({ strict: true })
  expires_at?: string | null;
}

export class ListApiKeysQuery {
  @ApiPropertyOptional({
    example: 'web',
    description: 'Only keys whose name contains this text (case-insensitive) or whose prefix starts with it',
  })
  @IsOptional()
  @IsString()
  @MaxLength(100)
  q?: string;

  @ApiPropertyOptional({ example: '3f0c9a52-6f3e-4a8e-9d51-2b1f6c0e7a10', description: "Only this project's keys" })
  @IsOptional()
  @IsUUID()
  project_id?: string;

  @ApiPropertyOptional({ default: false, description: 'Include revoked keys' })
  @IsOptional()
  @Type(() => String)
  @IsIn(['true', 'false'])
  include_revoked?: string;

  @ApiPropertyOptional({ default: 100, minimum: 1, maximum: 500 })
  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(500)
  limit?: number;

  @ApiPropertyOptional({ default: 0, minimum: 0 })
  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(0)
  offset?: number;
}

export class ApiKeyResponse extends LimitFieldsResponse {
  @ApiProperty({ example: 'b6f1c1de-4a4b-4c1e-9a55-0d7e1b7f1a2c' }) id: string;
  @ApiProperty({ example: 'demo' }) name: string;
  @ApiProperty({ example: 'sk-Q2xvdWQt', description: 'First characters of the key, for recognising it' })
  prefix: string;
  @ApiProperty({ example: ['chat', 'embeddings'], nullable: true, type: [String] }) scopes: string[] | null;
  @ApiProperty({ example: null, nullable: true, type: [String] }) models: string[] | null;
  @ApiProperty({ example: '3f0c9a52-6f3e-4a8e-9d51-2b1f6c0e7a10', nullable: true, type: String }) project_id:
    string | null;
  @ApiProperty({ example: 0.0123, description: 'Everything the key ever spent' }) spent_yuan: number;
  @ApiProperty({ example: 0, description: 'Of the current budget period: held for calls in flight' })
  reserved_yuan: number;
  @ApiProperty({
    example: 9.9877,
    nullable: true,
    type: Number,
    description: 'Of the current budget period (budget_usage.remaining_yuan)',
  })
  remaining_yuan: number | null;
  @ApiProperty({ example: 'active', enum: ['active', 'revoked', 'expired'] }) status: 'active' | 'revoked' | 'expired';
  @ApiProperty({ example: null, nullable: true, type: String }) expires_at: string | null;
  @ApiProperty({ example: null, nullable: true, type: String }) revoked_at: string | null;
  @ApiProperty({ example: '2026-11-22T03:00:00.000Z', nullable: true, type: String }) last_used_at: string | null;
  @ApiProperty({ example: '2026-11-22T02:00:00.000Z' }) created_at: string;
}

export class CreatedApiKeyResponse extends ApiKeyResponse {
  @ApiProperty({
    example: 'sk-Q2xvdWQtZXhhbXBsZS1rZXktc2hvd24tb25jZQ',
    description: 'The full key. Shown only in this response; only its hash is stored.',
  })
  key: string;
}

export class ApiKeyListResponse {
  @ApiProperty({ example: 'list' }) object: 'list';
  @ApiProperty({ type: [ApiKeyResponse] }) data: ApiKeyResponse[];
  @ApiProperty({ example: 1 }) total: number;
}
