import { ApiProperty, ApiPropertyOptional, OmitType } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsIn, IsInt, IsOptional, IsUUID, Matches, Max, Min } from 'class-validator';
import { BudgetUsageResponse } from '../../limits/dtos/limit-fields.dto';
import { BUDGET_PERIODS, BudgetPeriod } from '../../limits/limit-set';
import { decodeUsageCursor } from '../usage.cursor';
import { IsCursor } from '@app/envelope';
import type { UsageGroupBy, UsagePeriod } from '../usage.repository';

export const USAGE_PERIODS: readonly UsagePeriod[] = ['day', 'week', 'month'];
/** The admin report also buckets per hour (charts of a day or a few); its range is shorter then (usage.controller.ts). */
export const ADMIN_USAGE_PERIODS: readonly UsagePeriod[] = ['hour', ...USAGE_PERIODS];
export const USAGE_GROUP_BY: readonly UsageGroupBy[] = ['key', 'project', 'model', 'endpoint'];

/** Lines of a report (/v1/usage, /admin/usage) per page: some 260 bytes of JSON each, 1.3 MB at most. The default is the most, so a reader that predates `next_cursor` gets every line of any report it got whole before up to 5000 lines. */
export const USAGE_LIMIT = { default: 5000, max: 5000 } as const;

const DATE = /^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])$/;

/** The days of a report (both reports). */
export class UsageRangeQuery {
  @ApiPropertyOptional({
    example: '2026-11-01',
    description: 'First day (UTC; with `period`, of BUDGET_TIMEZONE) (default: 29 days before end_date)',
  })
  @IsOptional()
  @Matches(DATE, { message: 'start_date must be YYYY-MM-DD' })
  start_date?: string;

  @ApiPropertyOptional({
    example: '2026-11-22',
    description: 'Last day, inclusive (UTC; with `period`, of BUDGET_TIMEZONE) (default: today)',
  })
  @IsOptional()
  @Matches(DATE, { message: 'end_date must be YYYY-MM-DD' })
  end_date?: string;
}

/** The days of a report and the page of its lines (both reports). */
export class UsagePageQuery extends UsageRangeQuery {
  @ApiPropertyOptional({
    default: USAGE_LIMIT.default,
    minimum: 1,
    maximum: USAGE_LIMIT.max,
    example: 5000,
    description: 'Lines per page; `totals` and `total_cost_yuan` are always the whole report',
  })
  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(USAGE_LIMIT.max)
  limit?: number;

  @ApiPropertyOptional({
    description: 'The next_cursor of the previous page (opaque), with the same other parameters',
    example: 'WyIyMDI2LTExLTIyIixudWxsLG51bGwsImNoYXQuY29tcGxldGlvbnMiLCJ2ZW5kb3ItZ3B0LTQtbWluaSJd',
  })
  @IsOptional()
  @IsCursor(decodeUsageCursor)
  cursor?: string;
}

export class UsageQuery extends UsagePageQuery {
  @ApiPropertyOptional({
    example: 'month',
    enum: USAGE_PERIODS,
    description:
      'Lines per day, week (from Monday) or month in BUDGET_TIMEZONE, as budget periods count; `date` is the first day of each. Omitted: per UTC day.',
  })
  @IsOptional()
  @IsIn(USAGE_PERIODS)
  period?: UsagePeriod;
}

export class AdminUsageQuery extends UsagePageQuery {
  @ApiPropertyOptional({
    example: 'hour',
    enum: ADMIN_USAGE_PERIODS,
    description:
      'Lines per hour, day, week (from Monday) or month in BUDGET_TIMEZONE; `date` is the first day of each (`YYYY-MM-DDTHH:00` per hour). Omitted: per UTC day. Per hour the range is at most 31 days.',
  })
  @IsOptional()
  @IsIn(ADMIN_USAGE_PERIODS)
  period?: UsagePeriod;

  @ApiPropertyOptional({ description: 'Only this key' })
  @IsOptional()
  @IsUUID()
  key_id?: string;

  @ApiPropertyOptional({ description: 'Only the keys of this project (the project a key belongs to now)' })
  @IsOptional()
  @IsUUID()
  project_id?: string;

  @ApiPropertyOptional({
    enum: USAGE_GROUP_BY,
    default: 'key',
    example: 'model',
    description:
      '`project`: one line per project instead of per key (key_id null); `model` or `endpoint`: one line per model (endpoint null) or per endpoint (model null) over all keys (key_id and project_id null)',
  })
  @IsOptional()
  @IsIn(USAGE_GROUP_BY)
  group_by?: UsageGroupBy;
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

export class AdminUsageLine extends OmitType(UsageLine, ['endpoint', 'model'] as const) {
  @ApiProperty({ example: 'chat.completions', nullable: true, type: String, description: 'null with group_by=model' })
  endpoint: string | null;
  @ApiProperty({
    example: 'vendor-gpt-4-mini',
    nullable: true,
    type: String,
    description: 'null with group_by=endpoint',
  })
  model: string | null;
  @ApiProperty({
    example: 'b6f1c1de-4a4b-4c1e-9a55-0d7e1b7f1a2c',
    nullable: true,
    type: String,
    description: 'null with group_by=project, model or endpoint',
  })
  key_id: string | null;
  @ApiProperty({
    example: '3f0c9a52-6f3e-4a8e-9d51-2b1f6c0e7a10',
    nullable: true,
    type: String,
    description: "The key's project (now); null: none, or group_by=model or endpoint",
  })
  project_id: string | null;
}

/** Everything of one period (`date`) of the report, all lines summed. */
export class UsagePeriodTotal {
  @ApiProperty({ example: '2026-11-01' }) date: string;
  @ApiProperty({ example: 12 }) requests: number;
  @ApiProperty({ example: 1200 }) prompt_tokens: number;
  @ApiProperty({ example: 800 }) completion_tokens: number;
  @ApiProperty({ example: 0.0284 }) cost_yuan: number;
}

export class UsageKeySummary {
  @ApiProperty({ example: 'b6f1c1de-4a4b-4c1e-9a55-0d7e1b7f1a2c' }) id: string;
  @ApiProperty({ example: 'demo' }) name: string;
  @ApiProperty({ example: 10, nullable: true, type: Number }) budget_yuan: number | null;
  @ApiProperty({ example: 0.0284 }) spent_yuan: number;
  @ApiProperty({ example: 9.9716, nullable: true, type: Number }) remaining_yuan: number | null;
  @ApiProperty({ example: null, nullable: true, type: String }) project_id: string | null;
  @ApiProperty({ example: null, nullable: true, type: Number }) budget_tokens: number | null;
  @ApiProperty({ example: 'lifetime', enum: BUDGET_PERIODS }) budget_period: BudgetPeriod;
  @ApiProperty({
    type: BudgetUsageResponse,
    nullable: true,
    description: 'The current budget period (null without a budget)',
  })
  budget_usage: BudgetUsageResponse | null;
}

export class UsageResponse {
  @ApiProperty({ example: 'usage' }) object: 'usage';
  @ApiProperty({ example: '2026-10-24' }) start_date: string;
  @ApiProperty({ example: '2026-11-22' }) end_date: string;
  @ApiProperty({
    example: null,
    nullable: true,
    enum: USAGE_PERIODS,
    description: 'The bucketing asked for; null: UTC days',
  })
  period: UsagePeriod | null;
  @ApiProperty({ example: 'UTC', description: 'Zone of the dates: UTC, or BUDGET_TIMEZONE with `period`' })
  time_zone: string;
  @ApiProperty({ type: UsageKeySummary }) key: UsageKeySummary;
  @ApiProperty({
    type: [UsageLine],
    description: 'At most `limit` lines, by date, then endpoint and model',
  })
  data: UsageLine[];
  @ApiProperty({
    type: [UsagePeriodTotal],
    description: 'Per period (date), oldest first, over every line of the report (all pages)',
  })
  totals: UsagePeriodTotal[];
  @ApiProperty({ example: 0.0284, description: 'Over every line of the report (all pages)' }) total_cost_yuan: number;
  @ApiProperty({
    nullable: true,
    type: String,
    example: null,
    description: 'Pass as `cursor` for the next lines; null on the last page',
  })
  next_cursor: string | null;
}

export class AdminUsageResponse {
  @ApiProperty({ example: 'usage' }) object: 'usage';
  @ApiProperty({ example: '2026-10-24' }) start_date: string;
  @ApiProperty({ example: '2026-11-22' }) end_date: string;
  @ApiProperty({
    example: 'month',
    nullable: true,
    enum: ADMIN_USAGE_PERIODS,
    description: 'The bucketing asked for; null: UTC days',
  })
  period: UsagePeriod | null;
  @ApiProperty({ example: 'key', enum: USAGE_GROUP_BY, description: 'What each line sums over besides its period' })
  group_by: UsageGroupBy;
  @ApiProperty({ example: 'Asia/Shanghai', description: 'Zone of the dates: UTC, or BUDGET_TIMEZONE with `period`' })
  time_zone: string;
  @ApiProperty({
    type: [AdminUsageLine],
    description: 'At most `limit` lines, by date, then key, project, endpoint and model (nulls last)',
  })
  data: AdminUsageLine[];
  @ApiProperty({
    type: [UsagePeriodTotal],
    description: 'Per period (date), oldest first, over every line of the report (all pages)',
  })
  totals: UsagePeriodTotal[];
  @ApiProperty({ example: 1.5, description: 'Over every line of the report (all pages)' }) total_cost_yuan: number;
  @ApiProperty({
    nullable: true,
    type: String,
    example: null,
    description: 'Pass as `cursor` for the next lines; null on the last page',
  })
  next_cursor: string | null;
}
