import { locale } from '../../i18n';

/** The gateway's admin API shapes the console reads (apps/ai-gateway/src/keys/dtos, usage/dtos). */
export interface ApiKey {
  id: string;
  name: string;
  prefix: string;
  project_id: string | null;
  spent_yuan: number;
  remaining_yuan: number | null;
  budget_yuan?: number | null;
  requests_per_minute?: number | null;
  tokens_per_minute?: number | null;
  max_concurrent_requests?: number | null;
  budget_tokens?: number | null;
  budget_period?: 'lifetime' | 'daily' | 'weekly' | 'monthly';
  status: 'active' | 'revoked' | 'expired';
  expires_at: string | null;
  revoked_at: string | null;
  last_used_at: string | null;
  created_at: string;
}
export type CreatedApiKey = ApiKey & { key: string };
export interface List<T> {
  object: 'list';
  data: T[];
  total: number;
}
export interface UsageLine {
  key_id: string | null;
  project_id: string | null;
  date: string;
  endpoint: string;
  model: string;
  requests: number;
  failed: number;
  prompt_tokens: number;
  completion_tokens: number;
  cost_yuan: number;
}
export interface UsageReport {
  start_date: string;
  end_date: string;
  data: UsageLine[];
  totals: Array<{
    date: string;
    requests: number;
    prompt_tokens: number;
    completion_tokens: number;
    cost_yuan: number;
  }>;
  total_cost_yuan: number;
  /** The next page of lines (null: none left); usage-report.ts reads them all. */
  next_cursor: string | null;
}

const yuan = new Intl.NumberFormat(locale, { style: 'currency', currency: 'CNY', maximumFractionDigits: 4 });
const count = new Intl.NumberFormat(locale);
export const formatYuan = (v: number | null | undefined): string =>
  v === null || v === undefined ? '—' : yuan.format(v);
export const formatCount = (v: number): string => count.format(v);

/** YYYY-MM-DD of a time in UTC (the admin usage report's days are UTC without a period). */
export const utcDate = (ms: number): string => new Date(ms).toISOString().slice(0, 10);

/** Sums `value` of lines per `by`, largest first, at most `top`. */
export function topBy(
  lines: UsageLine[],
  by: (l: UsageLine) => string,
  value: (l: UsageLine) => number,
  top = 5,
): Array<{ name: string; value: number }> {
  const sums = new Map<string, number>();
  for (const l of lines) sums.set(by(l), (sums.get(by(l)) ?? 0) + value(l));
  return [...sums.entries()]
    .map(([name, v]) => ({ name, value: Math.round(v * 10_000) / 10_000 }))
    .sort((a, b) => b.value - a.value)
    .slice(0, top);
}

/** Every day from `from` to `to` (YYYY-MM-DD, UTC) with the report's value or 0: a chart shows the days without calls too. */
export function everyDay(
  from: string,
  to: string,
  totals: UsageReport['totals'],
  value: (d: UsageReport['totals'][number]) => number,
  label = (d: string) => d,
): Array<{ name: string; value: number }> {
  const byDate = new Map(totals.map((d) => [d.date, value(d)]));
  const days: Array<{ name: string; value: number }> = [];
  for (let t = Date.parse(`${from}T00:00:00Z`); t <= Date.parse(`${to}T00:00:00Z`); t += 86_400_000) {
    const d = utcDate(t);
    days.push({ name: label(d), value: byDate.get(d) ?? 0 });
  }
  return days;
}

/** The last hour of a deployment, or of all of them (`overall`). */
export interface LastHour {
  requests: number;
  errors: number;
  error_rate: number | null;
  latency_p50_ms: number | null;
  latency_p95_ms: number | null;
}

/** GET /admin/upstreams (apps/ai-gateway/src/usage/dtos/upstream-health.dto.ts). */
export interface UpstreamsReport {
  replica: string;
  window_start: string;
  window_end: string;
  overall: LastHour;
  data: Array<{
    name: string;
    type: string;
    models: string[];
    weight: number;
    cooldown: { cooling_down: boolean; until: string | null };
    last_hour: LastHour;
  }>;
}

/** Milliseconds as the console shows them (— without a value). */
export const ms = (v: number | null) => (v === null ? '—' : `${formatCount(v)} ms`);
