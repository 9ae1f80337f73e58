import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';

/** How report lines are bucketed: `day` (default), `week` (from Monday) or `month`, in a time zone; `hour` for the admin report only. */
export type UsagePeriod = 'hour' | 'day' | 'week' | 'month';

/** What one report line sums over besides its period: a key (default), a project, a model or an endpoint. */
export type UsageGroupBy = 'key' | 'project' | 'model' | 'endpoint';

export interface UsageRow {
  keyId: string | null;
  projectId: string | null;
  date: string;
  /** null when the lines are grouped by model. */
  endpoint: string | null;
  /** null when the lines are grouped by endpoint. */
  model: string | null;
  requests: number;
  failed: number;
  promptTokens: number;
  completionTokens: number;
  seconds: number;
  characters: number;
  images: number;
  costYuan: number;
}

/** A row as pg returns it: int columns as numbers, bigint and text sums as strings (null when all were null). */
interface LedgerRow {
  key_id: string | null;
  project_id: string | null;
  date: string;
  endpoint: string | null;
  model: string | null;
  requests: number;
  failed: number;
  prompt_tokens: string | null;
  completion_tokens: string | null;
  seconds: string | null;
  characters: string | null;
  images: string | null;
  cost_yuan: string | null;
}

/** Read side of the usage ledger: totals per period (day, week or month in a time zone), key or project, endpoint and model. */
@Injectable()
export class UsageRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /**
   * `from`..`to` are whole days of `timeZone`; lines are bucketed per `period` of that zone (a bucket at
   * either end holds only the range's part of it). `groupBy: 'project'` sums the keys of each project
   * (key_id null); projects are the keys' current ones (the hourly totals keep the key only). `groupBy: 'model'`
   * or `'endpoint'` sums every key (key_id and project_id null) per model (endpoint null) or per endpoint (model
   * null). With `period: 'hour'` the date is `YYYY-MM-DDTHH:00` of the zone.
   * Lines come in the order of `UsageLineKey` (date, then key, project, endpoint, model, nulls last); `limit`
   * keeps the first ones, `after` those past a line (keyset pagination: each line once, whatever the page size).
   */
  async summarize(opts: UsageFilter & { limit?: number; after?: UsageLineKey }): Promise<UsageRow[]> {
    const { sql, params } = grouped(opts);
    // Nulls compared as a flag and a placeholder: a row comparison with a null in it is null, never true.
    const order = `line.date, ${LINE_KEY.map((c) => `line.${c.column} IS NULL, COALESCE(line.${c.column}, ${c.none})`).join(', ')}`;
    let where = '';
    if (opts.after) {
      const a = opts.after;
      params.push(a.date, a.keyId, a.projectId, a.endpoint, a.model);
      const date = params.length - 4;
      const value = (c: (typeof LINE_KEY)[number], i: number) =>
        `$${date + 1 + i}::${c.type} IS NULL, COALESCE($${date + 1 + i}::${c.type}, ${c.none})`;
      where = `WHERE (${order}) > ($${date}::text, ${LINE_KEY.map(value).join(', ')})`;
    }
    params.push(opts.limit ?? null);
    const rows = await this.db.query<LedgerRow[]>(
      `SELECT * FROM (${sql}) line ${where} ORDER BY ${order} LIMIT $${params.length}`,
      params,
    );
    return rows.map((r) => ({
      keyId: r.key_id,
      projectId: r.project_id,
      date: r.date,
      endpoint: r.endpoint,
      model: r.model,
      requests: r.requests,
      failed: r.failed,
      promptTokens: Number(r.prompt_tokens),
      completionTokens: Number(r.completion_tokens),
      seconds: Number(r.seconds),
      characters: Number(r.characters),
      images: Number(r.images),
      costYuan: Number(r.cost_yuan),
    }));
  }

  /**
   * Every line of `summarize` summed per period (date), oldest first: one row per period of the range, so the
   * totals of a report are whole whatever page of its lines is read.
   */
  async periodTotals(opts: UsageFilter): Promise<UsagePeriodRow[]> {
    const { sql, params } = grouped(opts);
    const rows = await this.db.query<
      Array<{
        date: string;
        requests: string;
        prompt_tokens: string | null;
        completion_tokens: string | null;
        cost_yuan: string | null;
      }>
    >(
      `SELECT line.date, sum(line.requests)::bigint AS requests, sum(line.prompt_tokens)::bigint AS prompt_tokens,
              sum(line.completion_tokens)::bigint AS completion_tokens, sum(line.cost_yuan::numeric)::text AS cost_yuan
         FROM (${sql}) line GROUP BY line.date ORDER BY line.date`,
      params,
    );
    return rows.map((r) => ({
      date: r.date,
      requests: Number(r.requests),
      promptTokens: Number(r.prompt_tokens),
      completionTokens: Number(r.completion_tokens),
      costYuan: Number(r.cost_yuan),
    }));
  }

  /**
   * A key's calls, newest first, older than `before` when given: keyset pagination on (created_at, id), which
   * the index ix_ai_usage_records_key_time (key_id, created_at) serves whatever the key's history length.
   */
  async calls(keyId: string, limit: number, before?: { at: string; id: string }): Promise<CallRow[]> {
    const params: unknown[] = [keyId, limit];
    let where = 'key_id = $1';
    if (before) {
      params.push(before.at, before.id);
      where += ' AND (created_at, id) < ($3::timestamptz, $4::bigint)';
    }
    return this.db.query<CallRow[]>(
      `SELECT id::text AS id, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS at, endpoint, model, provider, status,
              http_status, error, prompt_tokens, completion_tokens, cost_yuan::float8 AS cost_yuan, latency_ms, request_id
         FROM ai_usage_records WHERE ${where} ORDER BY created_at DESC, id DESC LIMIT $2`,
      params,
    );
  }

  /**
   * Per deployment (the ledger's provider column) since a time, and over all of them (the row with provider
   * null, from ROLLUP): calls, failed calls and latency percentiles.
   * Bounded by ix_ai_usage_records_time (created_at): the work grows with the window's calls, not the ledger's.
   * Cached answers reached no deployment (provider null) and are left out. Errors are the deployment's own:
   * failures with a 5xx, a 429 or no status (timeouts, refused connections); a 400 the caller's request
   * earned says nothing about the upstream's health.
   */
  async deploymentStats(since: Date): Promise<DeploymentStatsRow[]> {
    const rows = await this.db.query<
      Array<{ provider: string | null; calls: number; failed: number; p50: number | null; p95: number | null }>
    >(
      `SELECT provider, count(*)::int AS calls, count(*) FILTER (WHERE status = 'failed' AND (http_status IS NULL OR http_status >= 500 OR http_status = 429))::int AS failed,
              percentile_cont(0.5) WITHIN GROUP (ORDER BY latency_ms) AS p50,
              percentile_cont(0.95) WITHIN GROUP (ORDER BY latency_ms) AS p95
         FROM ai_usage_records WHERE created_at >= $1 AND provider IS NOT NULL AND status <> 'cached'
        GROUP BY ROLLUP (provider)`,
      [since],
    );
    return rows.map((r) => ({
      provider: r.provider,
      calls: r.calls,
      failed: r.failed,
      p50Ms: r.p50 === null ? null : Math.round(r.p50),
      p95Ms: r.p95 === null ? null : Math.round(r.p95),
    }));
  }
}

/** What a report reads: its days, the lines' period and grouping, and the key or project it is limited to. */
export interface UsageFilter {
  from: string;
  to: string;
  keyId?: string;
  projectId?: string;
  period?: UsagePeriod;
  timeZone?: string;
  groupBy?: UsageGroupBy;
}

/** Where a report line sorts: its period and what it sums over (a line of a report has one of each). */
export type UsageLineKey = Pick<UsageRow, 'date' | 'keyId' | 'projectId' | 'endpoint' | 'model'>;

/** A period's sums over every line of a report. */
export type UsagePeriodRow = Pick<UsageRow, 'date' | 'requests' | 'promptTokens' | 'completionTokens' | 'costYuan'>;

/** The columns of a line after its date, in sort order, each with a placeholder for null (never compared alone). */
const LINE_KEY = [
  { column: 'key_id', type: 'uuid', none: `'00000000-0000-0000-0000-000000000000'::uuid` },
  { column: 'project_id', type: 'uuid', none: `'00000000-0000-0000-0000-000000000000'::uuid` },
  { column: 'endpoint', type: 'text', none: `''` },
  { column: 'model', type: 'text', none: `''` },
] as const;

/** The report's lines as one SELECT (not ordered), with its parameters: what the lines and the totals read. */
function grouped(opts: UsageFilter): { sql: string; params: unknown[] } {
  const params: unknown[] = [opts.from, opts.to, opts.timeZone ?? 'UTC', opts.period ?? 'day'];
  // A date is cast to timestamp first: `date AT TIME ZONE` would read it as a timestamptz of the session's zone.
  let where = `u.hour >= ($1::date::timestamp AT TIME ZONE $3) AND u.hour < (($2::date + 1)::timestamp AT TIME ZONE $3)`;
  if (opts.keyId) {
    params.push(opts.keyId);
    where += ` AND u.key_id = $${params.length}`;
  }
  if (opts.projectId) {
    params.push(opts.projectId);
    where += ` AND k.project_id = $${params.length}`;
  }
  const groupBy = opts.groupBy ?? 'key';
  const keyColumn = groupBy === 'key' ? 'u.key_id' : 'NULL::uuid';
  const projectColumn = groupBy === 'key' || groupBy === 'project' ? 'k.project_id' : 'NULL::uuid';
  const endpointColumn = groupBy === 'model' ? 'NULL::text' : 'u.endpoint::text';
  const modelColumn = groupBy === 'endpoint' ? 'NULL::text' : 'u.model::text';
  const dateFormat = opts.period === 'hour' ? `'YYYY-MM-DD"T"HH24:00'` : `'YYYY-MM-DD'`;
  // From the hourly totals a trigger on the ledger keeps (migrations/1796100000000-UsageHourly.ts): the
  // work of a report grows with the hours, endpoints and models a key used, not with its number of calls.
  // Hours are whole in UTC, so a zone whose offset is not whole hours puts the straddling hour in the bucket
  // where it starts.
  const sql = `SELECT ${keyColumn} AS key_id, ${projectColumn} AS project_id, to_char(date_trunc($4, u.hour AT TIME ZONE $3), ${dateFormat}) AS date,
              ${endpointColumn} AS endpoint, ${modelColumn} AS model,
              sum(u.requests)::int AS requests, sum(u.failed)::int AS failed,
              sum(u.prompt_tokens)::bigint AS prompt_tokens, sum(u.completion_tokens)::bigint AS completion_tokens,
              sum(u.seconds)::text AS seconds, sum(u.characters)::bigint AS characters, sum(u.images)::bigint AS images,
              sum(u.cost_yuan)::text AS cost_yuan
         FROM ai_usage_hourly u LEFT JOIN ai_api_keys k ON k.id = u.key_id
        WHERE ${where}
        GROUP BY 1, 2, 3, 4, 5`;
  return { sql, params };
}

/** A ledger row as the calls page reads it. */
export interface CallRow {
  id: string;
  at: string;
  endpoint: string;
  model: string;
  provider: string | null;
  status: string;
  http_status: number | null;
  error: string | null;
  prompt_tokens: number;
  completion_tokens: number;
  cost_yuan: number;
  latency_ms: number;
  request_id: string | null;
}

export interface DeploymentStatsRow {
  /** Null: all deployments together. */
  provider: string | null;
  calls: number;
  failed: number;
  p50Ms: number | null;
  p95Ms: number | null;
}
