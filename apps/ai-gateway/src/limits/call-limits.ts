import { periodBounds } from './budget-period';
import { BudgetPeriod, hasBudget, LimitSet } from './limit-set';

export const MINUTE_MS = 60_000;
/** Sub-buckets per minute window: a counted request is forgotten at most one bucket (1 s) late. */
const BUCKETS_PER_WINDOW = 60;
const BUCKET_MS = Math.ceil(MINUTE_MS / BUCKETS_PER_WINDOW);

/** Whose limits: the key, or the project that owns it. */
export interface LimitSubject {
  scope: 'key' | 'project';
  id: string;
  name: string;
  limits: LimitSet;
}

export type LimitField = 'requests_per_minute' | 'tokens_per_minute' | 'max_concurrent_requests' | 'budget';

/** Which limit a counter enforces, as the refusal and the headers name it. */
export interface LimitName {
  scope: 'key' | 'project';
  subject: string;
  field: LimitField;
  model: string | null;
}

/** "At most `limit` in any minute": requests (amount 1) or tokens (the call's reservation). */
export interface WindowCounter {
  key: string;
  name: string;
  /** What it counts (the name carries it too, for the stores' answers; this one is read without parsing). */
  field: 'requests_per_minute' | 'tokens_per_minute';
  limit: number;
  window_ms: number;
  bucket_ms: number;
  amount: number;
}

/** "At most `limit` calls at once": a lease per call, ended when it settles (or expires). */
export interface LeaseCounter {
  key: string;
  name: string;
  limit: number;
}

/** A budget for the current period and what the call holds of it (yuan as a decimal string). */
export interface BudgetCounter {
  key: string;
  name: string;
  subject: string;
  period: BudgetPeriod;
  period_start: number;
  period_end: number | null;
  budget_yuan: string | null;
  budget_tokens: number | null;
  alert_threshold: number | null;
  /** A key's lifetime yuan budget starts from what the key spent before it had one. */
  seed_key: string | null;
  yuan: string;
  tokens: number;
}

export interface LimitPlan {
  windows: WindowCounter[];
  leases: LeaseCounter[];
  budgets: BudgetCounter[];
}

export function encodeName(n: LimitName): string {
  return JSON.stringify([n.scope, n.subject, n.field, n.model]);
}

export function decodeName(s: string): LimitName {
  const [scope, subject, field, model] = JSON.parse(s) as [LimitName['scope'], string, LimitField, string | null];
  return { scope, subject, field, model };
}

const tag = (s: LimitSubject) => budgetSubject(s.scope, s.id);

function window(
  s: LimitSubject,
  field: 'requests_per_minute' | 'tokens_per_minute',
  limit: number,
  amount: number,
  model: string | null,
): WindowCounter {
  const kind = field === 'requests_per_minute' ? 'rpm' : 'tpm';
  return {
    key: `${kind}:${tag(s)}${model === null ? '' : `:${model}`}`,
    name: encodeName({ scope: s.scope, subject: s.name, field, model }),
    field,
    limit,
    window_ms: MINUTE_MS,
    bucket_ms: BUCKET_MS,
    amount,
  };
}

/** The requests-per-minute windows every request of a key counts in, at authentication (before its body is read). */
export function planRequest(subjects: LimitSubject[]): WindowCounter[] {
  return subjects
    .filter((s) => s.limits.requestsPerMinute !== null)
    .map((s) => window(s, 'requests_per_minute', s.limits.requestsPerMinute!, 1, null));
}

/**
 * Every other limit of a call, checked and reserved together once its cost is known: tokens per minute
 * (the call's token reservation), concurrent calls, the same per model, and the budgets of the current
 * period. Token windows are planned with amount 0 for a call without tokens: not checked, still reported.
 */
export function planCall(
  subjects: LimitSubject[],
  call: { model: string | null; yuan: string; tokens: number },
  nowMs: number,
  timeZone: string,
): LimitPlan {
  const plan: LimitPlan = { windows: [], leases: [], budgets: [] };
  for (const s of subjects) {
    const l = s.limits;
    if (l.tokensPerMinute !== null)
      plan.windows.push(window(s, 'tokens_per_minute', l.tokensPerMinute, call.tokens, null));
    if (l.maxConcurrentRequests !== null)
      plan.leases.push({
        key: `conc:${tag(s)}`,
        name: encodeName({ scope: s.scope, subject: s.name, field: 'max_concurrent_requests', model: null }),
        limit: l.maxConcurrentRequests,
      });
    const m = call.model !== null ? l.modelLimits?.[call.model] : undefined;
    if (m) {
      if (m.requests_per_minute != null)
        plan.windows.push(window(s, 'requests_per_minute', m.requests_per_minute, 1, call.model));
      if (m.tokens_per_minute != null)
        plan.windows.push(window(s, 'tokens_per_minute', m.tokens_per_minute, call.tokens, call.model));
      if (m.max_concurrent_requests != null) {
        plan.leases.push({
          key: `conc:${tag(s)}:${call.model}`,
          name: encodeName({ scope: s.scope, subject: s.name, field: 'max_concurrent_requests', model: call.model }),
          limit: m.max_concurrent_requests,
        });
      }
    }
    if (hasBudget(l)) {
      const { start, end } = periodBounds(l.budgetPeriod, nowMs, timeZone);
      plan.budgets.push({
        key: `b:${tag(s)}:${start}`,
        name: encodeName({ scope: s.scope, subject: s.name, field: 'budget', model: null }),
        subject: tag(s),
        period: l.budgetPeriod,
        period_start: start,
        period_end: end,
        budget_yuan: l.budgetYuan,
        budget_tokens: l.budgetTokens,
        alert_threshold: l.alertThreshold,
        seed_key: s.scope === 'key' && l.budgetPeriod === 'lifetime' ? s.id : null,
        yuan: call.yuan,
        tokens: call.tokens,
      });
    }
  }
  return plan;
}

export function planIsEmpty(plan: LimitPlan): boolean {
  return !plan.windows.length && !plan.leases.length && !plan.budgets.length;
}

/** The budget subject (`k:<id>` / `p:<id>`) of a key or project, as ai_budget_usage names it. */
export function budgetSubject(scope: 'key' | 'project', id: string): string {
  return `${scope === 'key' ? 'k' : 'p'}:${id}`;
}
