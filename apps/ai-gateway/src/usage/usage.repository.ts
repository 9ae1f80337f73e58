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
    let where = `created_at >= ($1::date AT TIME ZONE 'UTC') AND created_at < (($2::date + 1) AT TIME ZONE 'UTC')`;
    if (opts.keyId) {
      params.push(opts.keyId);
      where += ` AND key_id = $3`;
    }
    const rows = await this.db.query<LedgerRow[]>(
      `SELECT key_id, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS date, endpoint, model,
              count(*)::int AS requests, count(*) FILTER (WHERE status = 'failed')::int AS failed,
              sum(prompt_tokens)::bigint AS prompt_tokens, sum(completion_tokens)::bigint AS completion_tokens,
              sum(seconds)::text AS seconds, sum(characters)::bigint AS characters, sum(images)::bigint AS images,
              sum(cost_yuan)::text AS cost_yuan
         FROM ai_usage_records WHERE ${where}
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
