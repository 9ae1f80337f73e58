import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';

/** How report lines are bucketed: `day` (default), `week` (from Monday) or `month`, in a time zone. */
export type UsagePeriod = 'day' | 'week' | 'month';

export interface UsageRow {
  keyId: string | null;
  projectId: string | null;
  date: string;
  endpoint: string;
  model: string;
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
  endpoint: string;
  model: string;
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
   * (key_id null); projects are the keys' current ones (the hourly totals keep the key only).
   */
  async summarize(opts: { from: string; to: string; keyId?: string; projectId?: string; period?: UsagePeriod; timeZone?: string; groupBy?: 'key' | 'project' }): Promise<UsageRow[]> {
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
    const keyColumn = opts.groupBy === 'project' ? 'NULL::uuid' : 'u.key_id';
    // From the hourly totals a trigger on the ledger keeps (migrations/1796100000000-UsageHourly.ts): the
    // work of a report grows with the hours, endpoints and models a key used, not with its number of calls.
    // Hours are whole in UTC, so a zone whose offset is not whole hours puts the straddling hour in the bucket
    // where it starts.
    const rows = await this.db.query<LedgerRow[]>(
      `SELECT ${keyColumn} AS key_id, k.project_id, to_char(date_trunc($4, u.hour AT TIME ZONE $3), 'YYYY-MM-DD') AS date, u.endpoint, u.model,
              sum(u.requests)::int AS requests, sum(u.failed)::int AS failed,
              sum(u.prompt_tokens)::bigint AS prompt_tokens, sum(u.completion_tokens)::bigint AS completion_tokens,
              sum(u.seconds)::text AS seconds, sum(u.characters)::bigint AS characters, sum(u.images)::bigint AS images,
              sum(u.cost_yuan)::text AS cost_yuan
         FROM ai_usage_hourly u LEFT JOIN ai_api_keys k ON k.id = u.key_id
        WHERE ${where}
        GROUP BY 1, 2, 3, u.endpoint, u.model ORDER BY 3, 1, 2, u.endpoint, u.model`,
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
}
