import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsDateString, IsIn, IsInt, IsOptional, IsString, Matches, Max, MaxLength, Min } from 'class-validator';
import { AUDIT_ACTOR_KINDS } from './audit-entry';
import { decodeAuditCursor } from './audit-cursor';
import { IsCursor } from '@app/envelope';

/** Filters of the audit log (both apps: GET /api/v1/admin/audit-log, GET /admin/audit-log). */
export class AuditLogFilterQuery {
  @ApiPropertyOptional({ enum: AUDIT_ACTOR_KINDS, example: 'member' })
  @IsOptional()
  @IsIn(AUDIT_ACTOR_KINDS)
  actor_kind?: string;

  @ApiPropertyOptional({ example: '42', description: 'A member id, a CLI user' })
  @IsOptional()
  @IsString()
  @MaxLength(100)
  actor_id?: string;

  @ApiPropertyOptional({ example: 'key.*', description: 'An action (`key.created`), or a prefix ending in `*`' })
  @IsOptional()
  @Matches(/^[a-z0-9_.]{1,100}\*?$/, { message: 'action must be like key.created or key.*' })
  action?: string;

  @ApiPropertyOptional({ example: 'api_key' })
  @IsOptional()
  @Matches(/^[a-z0-9_]{1,50}$/, { message: 'target_type must be lower-case letters, digits and _' })
  target_type?: string;

  @ApiPropertyOptional({ example: '0b6f4a52-7d7e-4c1b-9a55-0a4c3f1d2e3f' })
  @IsOptional()
  @IsString()
  @MaxLength(100)
  target_id?: string;

  @ApiPropertyOptional({ example: '2026-11-01T00:00:00Z', description: 'From this time (inclusive), ISO 8601' })
  @IsOptional()
  @IsDateString({ strict: true }, { message: 'from must be an ISO 8601 time' })
  from?: string;

  @ApiPropertyOptional({ example: '2026-12-01T00:00:00Z', description: 'Until this time (exclusive), ISO 8601' })
  @IsOptional()
  @IsDateString({ strict: true }, { message: 'to must be an ISO 8601 time' })
  to?: string;

  @ApiPropertyOptional({
    description: 'The next_cursor of the previous page (opaque)',
    example: 'eyJiZWZvcmUiOiIxMjMifQ',
  })
  @IsOptional()
  @IsCursor(decodeAuditCursor)
  cursor?: string;
}

export class ListAuditLogQuery extends AuditLogFilterQuery {
  @ApiPropertyOptional({ default: 50, minimum: 1, maximum: 200 })
  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(200)
  limit?: number;
}

export class ExportAuditLogQuery extends AuditLogFilterQuery {
  @ApiProperty({ enum: ['csv', 'ndjson'], example: 'ndjson' })
  @IsIn(['csv', 'ndjson'])
  format: 'csv' | 'ndjson';
}

export class AuditActorView {
  @ApiProperty({ enum: AUDIT_ACTOR_KINDS, example: 'admin-token' })
  kind: string;
  @ApiProperty({ nullable: true, type: String, example: null })
  id: string | null;
}

export class AuditTargetView {
  @ApiProperty({ example: 'api_key' })
  type: string;
  @ApiProperty({ nullable: true, type: String, example: '0b6f4a52-7d7e-4c1b-9a55-0a4c3f1d2e3f' })
  id: string | null;
}

export class AuditLogEntryView {
  @ApiProperty({ example: '1234' })
  id: string;
  @ApiProperty({ example: '2026-11-20T08:15:30.123Z' })
  time: string;
  @ApiProperty({ type: AuditActorView })
  actor: AuditActorView;
  @ApiProperty({ example: 'key.updated' })
  action: string;
  @ApiProperty({ type: AuditTargetView })
  target: AuditTargetView;
  @ApiProperty({ nullable: true, type: 'object', additionalProperties: true, example: { budget_yuan: 10 } })
  before: unknown;
  @ApiProperty({ nullable: true, type: 'object', additionalProperties: true, example: { budget_yuan: 50 } })
  after: unknown;
  @ApiProperty({ nullable: true, type: String, example: '5f0c1e9e-7d4a-4b8e-9a51-3c1d2e3f4a5b' })
  request_id: string | null;
  @ApiProperty({ nullable: true, type: String, example: '203.0.113.7' })
  address: string | null;
}

export class AuditLogPage {
  @ApiProperty({ type: [AuditLogEntryView] })
  data: AuditLogEntryView[];
  @ApiProperty({
    nullable: true,
    type: String,
    description: 'Pass as `cursor` for the next (older) page; null on the last page',
    example: 'eyJiZWZvcmUiOiIxMjAwIn0',
  })
  next_cursor: string | null;
}
