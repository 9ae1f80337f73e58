import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import {
  IsIn,
  IsInt,
  IsNumber,
  IsObject,
  Max,
  Min,
  ValidateIf,
  ValidationArguments,
  registerDecorator,
} from 'class-validator';
import { MaxDecimalPlaces } from '@app/envelope';
import { BUDGET_PERIODS, BudgetPeriod, ModelLimit } from '../limit-set';

const MODEL_LIMIT_FIELDS = ['requests_per_minute', 'tokens_per_minute', 'max_concurrent_requests'] as const;
const MAX_MODELS = 200;

/** `{model: {requests_per_minute, tokens_per_minute, max_concurrent_requests}}`: at most 200 models, each field a positive integer or null. */
function IsModelLimits(): PropertyDecorator {
  return (target, propertyName) =>
    registerDecorator({
      name: 'isModelLimits',
      target: target.constructor,
      propertyName: propertyName as string,
      validator: {
        validate(value: unknown): boolean {
          if (value === null || value === undefined) return true;
          if (typeof value !== 'object' || Array.isArray(value)) return false;
          const entries = Object.entries(value);
          if (entries.length > MAX_MODELS) return false;
          return entries.every(([model, limit]) => {
            if (!model || model.length > 128 || !limit || typeof limit !== 'object' || Array.isArray(limit))
              return false;
            return Object.entries(limit as object).every(
              ([field, n]) =>
                (MODEL_LIMIT_FIELDS as readonly string[]).includes(field) &&
                (n === null || (Number.isInteger(n) && n >= 1 && n <= 100_000_000)),
            );
          });
        },
        defaultMessage(args: ValidationArguments): string {
          return `${args.property} must map at most ${MAX_MODELS} model names to objects of ${MODEL_LIMIT_FIELDS.join(', ')} (positive integers or null)`;
        },
      },
    });
}

const nullable = (_: object, v: unknown) => v !== null && v !== undefined;

/**
 * The limits a key and a project both take (snake_case as in the API). Every field optional; on a change
 * `null` removes the limit.
 */
export class LimitFieldsRequest {
  @ApiPropertyOptional({ example: 60, nullable: true, description: 'Requests per minute; null means unlimited' })
  @ValidateIf(nullable)
  @IsInt()
  @Min(1)
  @Max(1_000_000)
  requests_per_minute?: number | null;

  @ApiPropertyOptional({
    example: 40000,
    nullable: true,
    description:
      'Input + output tokens per minute (reserved from the estimate and max output, settled to the actual usage); null means unlimited',
  })
  @ValidateIf(nullable)
  @IsInt()
  @Min(1)
  @Max(100_000_000)
  tokens_per_minute?: number | null;

  @ApiPropertyOptional({
    example: 4,
    nullable: true,
    description: 'Calls in flight at once (a stream counts until it ends); null means unlimited',
  })
  @ValidateIf(nullable)
  @IsInt()
  @Min(1)
  @Max(100_000)
  max_concurrent_requests?: number | null;

  @ApiPropertyOptional({
    example: { 'vendor-gpt-4': { tokens_per_minute: 20000, max_concurrent_requests: 2 } },
    nullable: true,
    type: 'object',
    additionalProperties: {
      type: 'object',
      properties: {
        requests_per_minute: { type: 'integer' },
        tokens_per_minute: { type: 'integer' },
        max_concurrent_requests: { type: 'integer' },
      },
    },
    description: 'Limits per public model name, on top of the limits above',
  })
  @ValidateIf(nullable)
  @IsObject()
  @IsModelLimits()
  model_limits?: Record<string, ModelLimit> | null;

  @ApiPropertyOptional({
    example: 10,
    nullable: true,
    description: 'Budget in yuan per budget_period; null means unlimited',
  })
  @ValidateIf(nullable)
  @IsNumber({ allowNaN: false, allowInfinity: false })
  @MaxDecimalPlaces(6)
  @Min(0)
  @Max(1e9)
  budget_yuan?: number | null;

  @ApiPropertyOptional({
    example: 2000000,
    nullable: true,
    description: 'Budget in tokens (input + output) per budget_period; null means unlimited',
  })
  @ValidateIf(nullable)
  @IsInt()
  @Min(0)
  @Max(1e15)
  budget_tokens?: number | null;

  @ApiPropertyOptional({
    example: 'monthly',
    enum: BUDGET_PERIODS,
    description:
      'When the budgets start again: never (lifetime, the default), or at midnight in BUDGET_TIMEZONE of each day, Monday, or first of the month',
  })
  @ValidateIf((_, v) => v !== undefined)
  @IsIn(BUDGET_PERIODS)
  budget_period?: BudgetPeriod;

  @ApiPropertyOptional({
    example: 0.8,
    nullable: true,
    description:
      'Share of a budget whose crossing is announced once per period (log line and the ai_budget_events_total metric)',
  })
  @ValidateIf(nullable)
  @IsNumber({ allowNaN: false, allowInfinity: false })
  @MaxDecimalPlaces(3)
  @Min(0.001)
  @Max(1)
  alert_threshold?: number | null;
}

/** A budget's current period as answered for keys and projects. */
export class BudgetUsageResponse {
  @ApiProperty({ example: 'monthly', enum: BUDGET_PERIODS }) period: BudgetPeriod;
  @ApiProperty({
    example: '2026-10-31T16:00:00.000Z',
    description: 'Start of the current period: midnight in BUDGET_TIMEZONE (lifetime: 1970-01-01)',
  })
  period_start: string;
  @ApiProperty({ example: '2026-11-30T16:00:00.000Z', nullable: true, type: String }) period_end: string | null;
  @ApiProperty({ example: 1.25 }) spent_yuan: number;
  @ApiProperty({ example: 0.01, description: 'Held for calls in flight' }) reserved_yuan: number;
  @ApiProperty({ example: 8.74, nullable: true, type: Number }) remaining_yuan: number | null;
  @ApiProperty({ example: 120000 }) spent_tokens: number;
  @ApiProperty({ example: 4096 }) reserved_tokens: number;
  @ApiProperty({ example: 1875904, nullable: true, type: Number }) remaining_tokens: number | null;
}

/** The limit fields of a key or project answer. */
export class LimitFieldsResponse {
  @ApiProperty({ example: 60, nullable: true, type: Number }) requests_per_minute: number | null;
  @ApiProperty({ example: 40000, nullable: true, type: Number }) tokens_per_minute: number | null;
  @ApiProperty({ example: 4, nullable: true, type: Number }) max_concurrent_requests: number | null;
  @ApiProperty({
    example: { 'vendor-gpt-4': { tokens_per_minute: 20000 } },
    nullable: true,
    type: 'object',
    additionalProperties: true,
  })
  model_limits: Record<string, ModelLimit> | null;
  @ApiProperty({ example: 10, nullable: true, type: Number }) budget_yuan: number | null;
  @ApiProperty({ example: 2000000, nullable: true, type: Number }) budget_tokens: number | null;
  @ApiProperty({ example: 'monthly', enum: BUDGET_PERIODS }) budget_period: BudgetPeriod;
  @ApiProperty({ example: 0.8, nullable: true, type: Number }) alert_threshold: number | null;
  @ApiProperty({
    type: BudgetUsageResponse,
    nullable: true,
    description: 'The current budget period (null without a budget)',
  })
  budget_usage: BudgetUsageResponse | null;
}
