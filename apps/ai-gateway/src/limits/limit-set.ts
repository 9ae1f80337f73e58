/** How often a budget starts again: never (lifetime), or at midnight of each day, Monday or first of the month in BUDGET_TIMEZONE. */
export const BUDGET_PERIODS = ['lifetime', 'daily', 'weekly', 'monthly'] as const;
export type BudgetPeriod = (typeof BUDGET_PERIODS)[number];

/** Limits of one model inside a key's or project's limits (`model_limits`). */
export interface ModelLimit {
  requests_per_minute?: number | null;
  tokens_per_minute?: number | null;
  max_concurrent_requests?: number | null;
}

/** What a key or a project may spend and how fast; every field optional (null: no such limit). */
export interface LimitSet {
  requestsPerMinute: number | null;
  tokensPerMinute: number | null;
  maxConcurrentRequests: number | null;
  modelLimits: Record<string, ModelLimit> | null;
  /** Yuan as a decimal string (numeric columns stay exact). */
  budgetYuan: string | null;
  budgetTokens: number | null;
  budgetPeriod: BudgetPeriod;
  /** Share of a budget (0–1] whose crossing is announced once per period. */
  alertThreshold: number | null;
}

/** The limit columns both ai_api_keys and ai_projects carry, as their entities read them. */
export type LimitColumns = {
  requestsPerMinute: number | null;
  tokensPerMinute: number | null;
  maxConcurrentRequests: number | null;
  modelLimits: Record<string, ModelLimit> | null;
  budgetYuan: string | null;
  budgetTokens: string | number | null;
  budgetPeriod: BudgetPeriod;
  alertThreshold: string | number | null;
};

export function limitSetOf(row: LimitColumns): LimitSet {
  return {
    requestsPerMinute: row.requestsPerMinute,
    tokensPerMinute: row.tokensPerMinute,
    maxConcurrentRequests: row.maxConcurrentRequests,
    modelLimits: row.modelLimits && Object.keys(row.modelLimits).length ? row.modelLimits : null,
    budgetYuan: row.budgetYuan,
    budgetTokens: row.budgetTokens === null ? null : Number(row.budgetTokens),
    budgetPeriod: row.budgetPeriod,
    alertThreshold: row.alertThreshold === null ? null : Number(row.alertThreshold),
  };
}

export function hasBudget(limits: LimitSet): boolean {
  return limits.budgetYuan !== null || limits.budgetTokens !== null;
}

/** True when a call needs the admission round trip: any limit beyond the per-minute requests counted at authentication. */
export function limitsCall(limits: LimitSet): boolean {
  return (
    hasBudget(limits) ||
    limits.tokensPerMinute !== null ||
    limits.maxConcurrentRequests !== null ||
    limits.modelLimits !== null
  );
}
