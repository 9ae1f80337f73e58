import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional, IsUUID, Matches } from 'class-validator';

const DATE = /^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])$/;

export class UsageQuery {
  @ApiPropertyOptional({ example: '2026-11-01', description: 'First UTC day (default: 29 days before end_date)' })
  @IsOptional()
  @Matches(DATE, { message: 'start_date must be YYYY-MM-DD' })
  start_date?: string;

  @ApiPropertyOptional({ example: '2026-11-22', description: 'Last UTC day, inclusive (default: today)' })
  @IsOptional()
  @Matches(DATE, { message: 'end_date must be YYYY-MM-DD' })
  end_date?: string;
}

export class AdminUsageQuery extends UsageQuery {
  @ApiPropertyOptional({ description: 'Only this key' })
  @IsOptional()
  @IsUUID()
  key_id?: string;
}

export class UsageLine {
  @ApiProperty({ example: '2026-11-22' }) date: string;
  @ApiProperty({ example: 'chat.completions' }) endpoint: string;
  @ApiProperty({ example: 'vendor-gpt-4-mini' }) model: string;
  @ApiProperty({ example: 12 }) requests: number;
  @ApiProperty({ example: 1, description: 'Failed calls (not charged)' }) failed: number;
  @ApiProperty({ example: 1200 }) prompt_tokens: number;
  @ApiProperty({ example: 800 }) completion_tokens: number;
  @ApiProperty({ example: 0 }) seconds: number;
  @ApiProperty({ example: 0 }) characters: number;
  @ApiProperty({ example: 0 }) images: number;
  @ApiProperty({ example: 0.0284 }) cost_yuan: number;
}

export class AdminUsageLine extends UsageLine {
  @ApiProperty({ example: 'b6f1c1de-4a4b-4c1e-9a55-0d7e1b7f1a2c', nullable: true, type: String }) key_id: string | null;
}

export class UsageKeySummary {
  @ApiProperty({ example: 'b6f1c1de-4a4b-4c1e-9a55-0d7e1b7f1a2c' }) id: string;
  @ApiProperty({ example: 'demo' }) name: string;
  @ApiProperty({ example: 10, nullable: true, type: Number }) budget_yuan: number | null;
  @ApiProperty({ example: 0.0284 }) spent_yuan: number;
  @ApiProperty({ example: 9.9716, nullable: true, type: Number }) remaining_yuan: number | null;
}

export class UsageResponse {
  @ApiProperty({ example: 'usage' }) object: 'usage';
  @ApiProperty({ example: '2026-10-24' }) start_date: string;
  @ApiProperty({ example: '2026-11-22' }) end_date: string;
  @ApiProperty({ type: UsageKeySummary }) key: UsageKeySummary;
  @ApiProperty({ type: [UsageLine] }) data: UsageLine[];
  @ApiProperty({ example: 0.0284 }) total_cost_yuan: number;
}

export class AdminUsageResponse {
  @ApiProperty({ example: 'usage' }) object: 'usage';
  @ApiProperty({ example: '2026-10-24' }) start_date: string;
  @ApiProperty({ example: '2026-11-22' }) end_date: string;
  @ApiProperty({ type: [AdminUsageLine] }) data: AdminUsageLine[];
  @ApiProperty({ example: 1.5 }) total_cost_yuan: number;
}
