import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsInt, IsOptional, Max, Min } from 'class-validator';
import { decodeCallsCursor } from '../key-calls.cursor';
import { IsCursor } from '@app/envelope';

export class KeyCallsQuery {
  @ApiPropertyOptional({ default: 50, minimum: 1, maximum: 200, example: 50 })
  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(200)
  limit?: number;

  @ApiPropertyOptional({
    description: 'The next_cursor of the previous page (opaque)',
    example: 'eyJhdCI6IjIwMjYtMTEtMjJUMDg6MDA6MDAuMDAwMDAwWiIsImlkIjoiNDIifQ',
  })
  @IsOptional()
  @IsCursor(decodeCallsCursor)
  cursor?: string;
}

/** One metered call of a key: its metadata only (the gateway keeps no prompts or answers in the ledger). */
export class KeyCall {
  @ApiProperty({ example: '4711', description: 'Ledger row id' }) id: string;
  @ApiProperty({ example: '2026-11-22T08:00:00.123Z', description: 'When the call settled' }) created_at: string;
  @ApiProperty({ example: 'chat.completions' }) endpoint: string;
  @ApiProperty({ example: 'vendor-gpt-4-mini', description: 'Public model name' }) model: string;
  @ApiProperty({
    example: 'primary',
    nullable: true,
    type: String,
    description: 'The deployment (providers file) that answered; null when none was reached',
  })
  provider: string | null;
  @ApiProperty({ example: 'ok', enum: ['ok', 'failed', 'aborted', 'cached'] }) status: string;
  @ApiProperty({ example: 200, nullable: true, type: Number }) http_status: number | null;
  @ApiProperty({ example: null, nullable: true, type: String, description: 'Error text of a failed call' }) error:
    string | null;
  @ApiProperty({ example: 1200 }) prompt_tokens: number;
  @ApiProperty({ example: 300 }) completion_tokens: number;
  @ApiProperty({ example: 0.0018 }) cost_yuan: number;
  @ApiProperty({ example: 840 }) latency_ms: number;
  @ApiProperty({ example: 'req_8f3a2c', nullable: true, type: String, description: 'The X-Request-Id of the call' })
  request_id: string | null;
}

export class KeyCallsPage {
  @ApiProperty({ example: 'list' }) object: 'list';
  @ApiProperty({ type: [KeyCall], description: 'Newest first' }) data: KeyCall[];
  @ApiProperty({
    nullable: true,
    type: String,
    description: 'Pass as `cursor` for the next (older) page; null on the last page',
    example: null,
  })
  next_cursor: string | null;
}
