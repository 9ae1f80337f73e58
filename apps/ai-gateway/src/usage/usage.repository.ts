import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';

export interface UsageRow {
  keyId: string | null;
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

/** Read side of the usage ledger: totals per UTC day, endpoint and model. */
@Injectable()
export class UsageRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  async summarize(opts: { from: string; to: string; keyId?: string }): Promise<UsageRow[]> {
    const params: unknown[] = [opts.from, opts.to];
    let where = `hour >= ($1::date AT TIME ZONE 'UTC') AND hour < (($2::date + 1) AT TIME ZONE 'UTC')`;
    if (opts.keyId) {
      params.push(opts.keyId);
      where += ` AND key_id = $3`;
    }
    // From the hourly totals a trigger on the ledger keeps (migrations/1796100000000-UsageHourly.ts): the
    // work of a report grows with the hours, endpoints and models a key used, not with its number of calls.
    const rows = await this.db.query<LedgerRow[]>(
      `SELECT key_id, to_char(hour AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS date, endpoint, model,
              sum(requests)::int AS requests, sum(failed)::int AS failed,
              sum(prompt_tokens)::bigint AS prompt_tokens, sum(completion_tokens)::bigint AS completion_tokens,
              sum(seconds)::text AS seconds, sum(characters)::bigint AS characters, sum(images)::bigint AS images,
              sum(cost_yuan)::text AS cost_yuan
         FROM ai_usage_hourly WHERE ${where}
        GROUP BY key_id, 2, endpoint, model ORDER BY 2, key_id, endpoint, model`,
      params,
    );
    return rows.map((r) => ({
      keyId: r.key_id,
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
