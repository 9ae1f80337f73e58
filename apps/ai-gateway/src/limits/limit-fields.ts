import { Injectable } from '@nestjs/common';
import { Clock } from '@app/platform';
import { GatewayConfig } from '../config/gateway.config';
import { periodBounds } from './budget-period';
import { budgetSubject } from './call-limits';
import type { BudgetUsageResponse, LimitFieldsRequest, LimitFieldsResponse } from './dtos/limit-fields.dto';
import type { LimitColumnsEmbed } from './limit-columns';
import { hasBudget, limitSetOf } from './limit-set';
import { BudgetUsageRow, LimitsRepository } from './limits.repository';

/** The columns a request's limit fields change (only the fields it names; null clears). */
export function limitChanges(req: LimitFieldsRequest): Partial<LimitColumnsEmbed> {
  const c: Partial<LimitColumnsEmbed> = {};
  if (req.requests_per_minute !== undefined) c.requestsPerMinute = req.requests_per_minute;
  if (req.tokens_per_minute !== undefined) c.tokensPerMinute = req.tokens_per_minute;
  if (req.max_concurrent_requests !== undefined) c.maxConcurrentRequests = req.max_concurrent_requests;
  if (req.model_limits !== undefined)
    c.modelLimits = req.model_limits === null || !Object.keys(req.model_limits).length ? null : req.model_limits;
  if (req.budget_yuan !== undefined) c.budgetYuan = req.budget_yuan === null ? null : req.budget_yuan.toFixed(6);
  if (req.budget_tokens !== undefined) c.budgetTokens = req.budget_tokens === null ? null : String(req.budget_tokens);
  if (req.budget_period !== undefined) c.budgetPeriod = req.budget_period;
  if (req.alert_threshold !== undefined)
    c.alertThreshold = req.alert_threshold === null ? null : String(req.alert_threshold);
  return c;
}

/** A key's or project's limit columns in the API's names and types (answers and audit rows alike). */
export function limitFieldValues(l: LimitColumnsEmbed): Omit<LimitFieldsResponse, 'budget_usage'> {
  return {
    requests_per_minute: l.requestsPerMinute,
    tokens_per_minute: l.tokensPerMinute,
    max_concurrent_requests: l.maxConcurrentRequests,
    model_limits: l.modelLimits,
    budget_yuan: l.budgetYuan === null ? null : Number(l.budgetYuan),
    budget_tokens: l.budgetTokens === null ? null : Number(l.budgetTokens),
    budget_period: l.budgetPeriod,
    alert_threshold: l.alertThreshold === null ? null : Number(l.alertThreshold),
  };
}

/** Answers the limit fields of keys and projects, with the current period of their budgets. */
@Injectable()
export class LimitFields {
  constructor(
    private readonly limits: LimitsRepository,
    private readonly config: GatewayConfig,
    private readonly clock: Clock,
  ) {}

  /** For each owner (in order), its limit fields and current budget usage: one query for all of them. */
  async describe(
    owners: Array<{ scope: 'key' | 'project'; id: string; limits: LimitColumnsEmbed }>,
  ): Promise<LimitFieldsResponse[]> {
    const now = this.clock.now();
    const periods = owners.map((o) => ({
      subject: budgetSubject(o.scope, o.id),
      bounds: periodBounds(o.limits.budgetPeriod, now, this.config.BUDGET_TIMEZONE),
    }));
    const budgeted = owners.map((o) => hasBudget(limitSetOf(o.limits)));
    const rows = await this.limits.usage(
      periods.filter((_, i) => budgeted[i]).map((p) => ({ subject: p.subject, period_start: p.bounds.start })),
    );
    return owners.map((o, i) => {
      const row = budgeted[i]
        ? rows.find((r) => r.subject === periods[i].subject && Number(r.period_start) === periods[i].bounds.start)
        : undefined;
      return this.fields(o.limits, budgeted[i] ? this.usage(o.limits, periods[i].bounds, row) : null);
    });
  }

  private usage(
    l: LimitColumnsEmbed,
    bounds: { start: number; end: number | null },
    row: BudgetUsageRow | undefined,
  ): BudgetUsageResponse {
    const spentYuan = row ? Number(row.spent_yuan) : 0;
    const reservedYuan = row ? Number(row.reserved_yuan) : 0;
    const spentTokens = row ? Number(row.spent_tokens) : 0;
    const reservedTokens = row ? Number(row.reserved_tokens) : 0;
    return {
      period: l.budgetPeriod,
      period_start: this.iso(bounds.start),
      period_end: bounds.end === null ? null : this.iso(bounds.end),
      spent_yuan: round(spentYuan),
      reserved_yuan: round(reservedYuan),
      remaining_yuan:
        l.budgetYuan === null ? null : Math.max(0, round(Number(l.budgetYuan) - spentYuan - reservedYuan)),
      spent_tokens: spentTokens,
      reserved_tokens: reservedTokens,
      remaining_tokens:
        l.budgetTokens === null ? null : Math.max(0, Number(l.budgetTokens) - spentTokens - reservedTokens),
    };
  }

  private fields(l: LimitColumnsEmbed, usage: BudgetUsageResponse | null): LimitFieldsResponse {
    return { ...limitFieldValues(l), budget_usage: usage };
  }

  /** An instant as ISO 8601 (UTC); period boundaries are local midnights of BUDGET_TIMEZONE. */
  private iso(ms: number): string {
    return new Date(ms).toISOString();
  }
}

function round(x: number): number {
  return Math.round(x * 1e10) / 1e10;
}
