/** What a store answers to an admission (both backends, the PostgreSQL function's JSON as is). */
export interface AdmitAnswer {
  allowed: boolean;
  /** The first limit that refused; retry_ms null when waiting cannot help (a reservation above the limit itself). */
  refused?: { name: string; kind: 'window' | 'concurrency' | 'budget'; retry_ms: number | null };
  /** Every window counted, in plan order: its use after this call (when allowed) and ms until it is empty again. */
  windows: Array<{ name: string; limit: number; used: number; reset_ms: number }>;
  /** Every budget of the plan (PostgreSQL answers them): what its period has spent and holds reserved. */
  budgets?: Array<{
    name: string;
    spent_yuan: number | string;
    reserved_yuan: number | string;
    spent_tokens: number | string;
    reserved_tokens: number | string;
    /** Spent at or above the budget (and above 0): every call of the period is refused (1797050000000-BudgetUsedUp). */
    used_up?: boolean;
  }>;
}

export const ALLOWED: AdmitAnswer = { allowed: true, windows: [] };

/** A settled token window: the reservation made in `bucket` replaced by the actual use. */
export interface WindowSettlement {
  key: string;
  bucket: number;
  bucket_ms: number;
  window_ms: number;
  reserved: number;
  actual: number;
}

/** Budgets whose alert threshold was crossed or which were spent by a settlement, each once per period. */
export interface SettleAnswer {
  /** False when there was nothing to settle (settled already, or released by the sweep). */
  settled: boolean;
  alerts: string[];
  exhausted: string[];
}
