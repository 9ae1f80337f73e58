import { Controller, Get, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { CurrentPrincipal, Principal, Roles } from '@app/auth';
import { GatewayError, GatewayErrorCode } from '../errors';
import { Clock } from '@app/platform';
import { GatewayConfig } from '../config/gateway.config';
import { ApiKeysService } from '../keys/api-keys.service';
import { apiKeyClaims } from '../keys/key-scopes';
import { ApiOpenAiErrors } from '../http/openai-error.doc';
import { roundYuan } from './pricing';
import {
  AdminUsageQuery,
  AdminUsageResponse,
  UsagePeriodTotal,
  USAGE_LIMIT,
  UsagePageQuery,
  UsageQuery,
  UsageResponse,
} from './dtos/usage.dto';
import { KeyReads } from '../limits/key-reads';
import { LedgerRepository } from './ledger.repository';
import { decodeUsageCursor, encodeUsageCursor } from './usage.cursor';
import { UsageFilter, UsagePeriodRow, UsageRepository, UsageRow } from './usage.repository';

const MAX_DAYS = 366;
/** Per hour a range of a month is already ~744 buckets per line: enough for a chart, bounded for the query. */
const MAX_HOUR_DAYS = 31;

@Controller()
export class UsageController {
  constructor(
    private readonly usage: UsageRepository,
    private readonly ledger: LedgerRepository,
    private readonly keys: ApiKeysService,
    private readonly config: GatewayConfig,
    private readonly clock: Clock,
    private readonly reads: KeyReads,
  ) {}

  @Get('v1/usage')
  @Roles('api-key')
  @ApiTags('usage')
  @ApiOperation({
    summary: 'Usage of the calling key per day (or week or month), endpoint and model, with its budget',
    description:
      'Per UTC day by default; `period=day|week|month` buckets per day, week (from Monday) or month in BUDGET_TIMEZONE, as budget periods count. ' +
      `At most \`limit\` lines (default ${USAGE_LIMIT.default}, at most ${USAGE_LIMIT.max}) per answer; \`next_cursor\` fetches the next ones (null: none left), while \`totals\` and \`total_cost_yuan\` are the whole report's on every page. ` +
      "At most AI_READS_PER_KEY of a key's reads run at once in a replica (429 past it).",
  })
  @ApiOkResponse({ type: UsageResponse })
  @ApiOpenAiErrors(400, 401, 429, 503)
  mine(@CurrentPrincipal() principal: Principal, @Query() q: UsageQuery): Promise<UsageResponse> {
    apiKeyClaims(principal);
    return this.reads.run(principal, () => this.keyUsage(principal.id, q));
  }

  private async keyUsage(keyId: string, q: UsageQuery): Promise<UsageResponse> {
    const timeZone = this.zoneOf(q);
    const { from, to } = range(q, this.clock.now(), timeZone);
    // This replica's calls of the key still in the write buffer are in the answer; a key with none writes nothing.
    await this.ledger.flushFor(keyId);
    const [page, key] = await Promise.all([
      this.page({ from, to, keyId, period: q.period, timeZone }, q),
      this.keys.get(keyId),
    ]);
    return {
      object: 'usage',
      start_date: from,
      end_date: to,
      period: q.period ?? null,
      time_zone: timeZone,
      key: {
        id: key.id,
        name: key.name,
        budget_yuan: key.budget_yuan,
        spent_yuan: key.spent_yuan,
        remaining_yuan: key.remaining_yuan,
        project_id: key.project_id,
        budget_tokens: key.budget_tokens,
        budget_period: key.budget_period,
        budget_usage: key.budget_usage,
      },
      // Never grouped, so every line has its endpoint and model.
      data: page.rows.map((r) => ({ ...line(r), endpoint: r.endpoint ?? '', model: r.model ?? '' })),
      totals: totals(page.periods),
      total_cost_yuan: total(page.periods),
      next_cursor: page.nextCursor,
    };
  }

  @Get('admin/usage')
  @Roles('viewer')
  @ApiTags('admin')
  @ApiOperation({
    summary:
      'Usage report of all keys (or one key, or one project) per day (or week or month), key or project, endpoint and model',
    description:
      "Per UTC day by default; `period=day|week|month` buckets in BUDGET_TIMEZONE. `project_id` keeps the keys of one project; `group_by=project` sums each project's keys. " +
      `At most \`limit\` lines (default ${USAGE_LIMIT.default}, at most ${USAGE_LIMIT.max}) per answer; \`next_cursor\` fetches the next ones (null: none left), while \`totals\` and \`total_cost_yuan\` are the whole report's on every page. ` +
      "With `key_id`, the answering replica's buffered calls of that key are written first. Without it the report has this replica's calls settled up to at most AI_LEDGER_FLUSH_MS before it (such reads share one ledger write per AI_LEDGER_FLUSH_MS), and other replicas' as of their last ledger write (at most AI_LEDGER_FLUSH_MS behind).",
  })
  @ApiOkResponse({ type: AdminUsageResponse })
  @ApiOpenAiErrors(400, 401, 403)
  async report(@Query() q: AdminUsageQuery): Promise<AdminUsageResponse> {
    const timeZone = this.zoneOf(q);
    const { from, to } = range(q, this.clock.now(), timeZone, q.period === 'hour' ? MAX_HOUR_DAYS : MAX_DAYS);
    // A key's report has its calls; a report of everyone costs at most one write per interval, however many read.
    await (q.key_id ? this.ledger.flushFor(q.key_id) : this.ledger.flushForReport());
    const groupBy = q.group_by ?? 'key';
    const filter = { from, to, keyId: q.key_id, projectId: q.project_id, period: q.period, timeZone, groupBy };
    const page = await this.page(filter, q);
    return {
      object: 'usage',
      start_date: from,
      end_date: to,
      period: q.period ?? null,
      group_by: groupBy,
      time_zone: timeZone,
      data: page.rows.map((r) => ({ key_id: r.keyId, project_id: r.projectId, ...line(r) })),
      totals: totals(page.periods),
      total_cost_yuan: total(page.periods),
      next_cursor: page.nextCursor,
    };
  }

  /**
   * A page of a report's lines (at most `limit`, after `cursor`: keyset, so each line comes once) and the whole
   * report's totals per period. A report answered whole in its first page has them from its lines (one statement);
   * any other page sums every line apart.
   */
  private async page(
    filter: UsageFilter,
    q: UsagePageQuery,
  ): Promise<{ rows: UsageRow[]; periods: UsagePeriodRow[]; nextCursor: string | null }> {
    const limit = q.limit ?? USAGE_LIMIT.default;
    const after = q.cursor ? (decodeUsageCursor(q.cursor) ?? undefined) : undefined;
    const lines = this.usage.summarize({ ...filter, limit: limit + 1, after });
    const [found, summed] = await Promise.all([
      lines,
      // Asked beside the lines unless the lines can be the whole report (first page).
      after ? this.usage.periodTotals(filter) : undefined,
    ]);
    const rows = found.slice(0, limit);
    const more = found.length > limit;
    const periods = summed ?? (more ? await this.usage.periodTotals(filter) : rows);
    return { rows, periods, nextCursor: more ? encodeUsageCursor(rows[rows.length - 1]) : null };
  }

  /** Days are UTC unless a period is asked for: then they are BUDGET_TIMEZONE's, as budget periods are. */
  private zoneOf(q: UsageQuery): string {
    return q.period ? this.config.BUDGET_TIMEZONE : 'UTC';
  }
}

/** Today's date (YYYY-MM-DD) in a time zone. */
function today(now: number, timeZone: string): string {
  return new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit' }).format(now);
}

function range(q: UsageQuery, now: number, timeZone: string, maxDays = MAX_DAYS): { from: string; to: string } {
  const to = q.end_date ?? today(now, timeZone);
  const from = q.start_date ?? new Date(Date.parse(`${to}T00:00:00Z`) - 29 * 86_400_000).toISOString().slice(0, 10);
  for (const [param, d] of [
    ['start_date', from],
    ['end_date', to],
  ]) {
    const t = Date.parse(`${d}T00:00:00Z`);
    if (Number.isNaN(t) || new Date(t).toISOString().slice(0, 10) !== d) {
      throw new GatewayError(GatewayErrorCode.DateInvalid, { param });
    }
  }
  const days = (Date.parse(`${to}T00:00:00Z`) - Date.parse(`${from}T00:00:00Z`)) / 86_400_000;
  if (days < 0) throw new GatewayError(GatewayErrorCode.DateRangeReversed);
  if (days >= maxDays) throw new GatewayError(GatewayErrorCode.DateRangeTooLong, { maxDays });
  return { from, to };
}

function line(r: UsageRow) {
  return {
    date: r.date,
    endpoint: r.endpoint,
    model: r.model,
    requests: r.requests,
    failed: r.failed,
    prompt_tokens: r.promptTokens,
    completion_tokens: r.completionTokens,
    seconds: r.seconds,
    characters: r.characters,
    images: r.images,
    cost_yuan: r.costYuan,
  };
}

/** Per period of the lines (or of `UsageRepository.periodTotals`, already one per period). */
function totals(rows: UsagePeriodRow[]): UsagePeriodTotal[] {
  const byDate = new Map<string, UsagePeriodTotal>();
  for (const r of rows) {
    const t = byDate.get(r.date) ?? { date: r.date, requests: 0, prompt_tokens: 0, completion_tokens: 0, cost_yuan: 0 };
    t.requests += r.requests;
    t.prompt_tokens += r.promptTokens;
    t.completion_tokens += r.completionTokens;
    t.cost_yuan += r.costYuan;
    byDate.set(r.date, t);
  }
  // Rows come ordered by date (usage.repository.ts), so the map keeps that order.
  return [...byDate.values()].map((t) => ({ ...t, cost_yuan: roundYuan(t.cost_yuan) }));
}

function total(rows: UsagePeriodRow[]): number {
  return roundYuan(rows.reduce((s, r) => s + r.costYuan, 0));
}
