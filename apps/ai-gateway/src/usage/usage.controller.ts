import { Controller, Get, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { CurrentPrincipal, Principal, Roles } from '@app/auth';
import { GatewayError, GatewayErrorCode } from '@app/envelope';
import { ApiKeysService } from '../keys/api-keys.service';
import { apiKeyClaims } from '../keys/key-scopes';
import { ApiOpenAiErrors } from '../http/openai-error.doc';
import { roundYuan } from './pricing';
import { AdminUsageQuery, AdminUsageResponse, UsageQuery, UsageResponse } from './dtos/usage.dtos';
import { LedgerWriter } from './ledger.writer';
import { UsageRepository, UsageRow } from './usage.repository';

const MAX_DAYS = 366;

@Controller()
export class UsageController {
  constructor(
    private readonly usage: UsageRepository,
    private readonly ledger: LedgerWriter,
    private readonly keys: ApiKeysService,
  ) {}

  @Get('v1/usage')
  @Roles('api-key')
  @ApiTags('usage')
  @ApiOperation({ summary: 'Usage of the calling key per UTC day, endpoint and model, with its budget' })
  @ApiOkResponse({ type: UsageResponse })
  @ApiOpenAiErrors(400, 401)
  async mine(@CurrentPrincipal() principal: Principal, @Query() q: UsageQuery): Promise<UsageResponse> {
    apiKeyClaims(principal);
    const { from, to } = range(q);
    await this.ledger.flush();
    const [rows, key] = await Promise.all([this.usage.summarize({ from, to, keyId: principal.id }), this.keys.get(principal.id)]);
    return {
      object: 'usage',
      start_date: from,
      end_date: to,
      key: { id: key.id, name: key.name, budget_yuan: key.budget_yuan, spent_yuan: key.spent_yuan, remaining_yuan: key.remaining_yuan },
      data: rows.map(line),
      total_cost_yuan: total(rows),
    };
  }

  @Get('admin/usage')
  @Roles('admin')
  @ApiTags('admin')
  @ApiOperation({ summary: 'Usage report of all keys (or one) per UTC day, endpoint and model' })
  @ApiOkResponse({ type: AdminUsageResponse })
  @ApiOpenAiErrors(400, 401, 403)
  async report(@Query() q: AdminUsageQuery): Promise<AdminUsageResponse> {
    const { from, to } = range(q);
    await this.ledger.flush();
    const rows = await this.usage.summarize({ from, to, keyId: q.key_id });
    return { object: 'usage', start_date: from, end_date: to, data: rows.map((r) => ({ key_id: r.keyId, ...line(r) })), total_cost_yuan: total(rows) };
  }
}

function range(q: UsageQuery): { from: string; to: string } {
  const to = q.end_date ?? new Date().toISOString().slice(0, 10);
  const from = q.start_date ?? new Date(Date.parse(`${to}T00:00:00Z`) - 29 * 86_400_000).toISOString().slice(0, 10);
  for (const [param, d] of [['start_date', from], ['end_date', to]]) {
    const t = Date.parse(`${d}T00:00:00Z`);
    if (Number.isNaN(t) || new Date(t).toISOString().slice(0, 10) !== d) {
      throw new GatewayError(GatewayErrorCode.DateInvalid, { param });
    }
  }
  const days = (Date.parse(`${to}T00:00:00Z`) - Date.parse(`${from}T00:00:00Z`)) / 86_400_000;
  if (days < 0) throw new GatewayError(GatewayErrorCode.DateRangeReversed);
  if (days >= MAX_DAYS) throw new GatewayError(GatewayErrorCode.DateRangeTooLong, { maxDays: MAX_DAYS });
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

function total(rows: UsageRow[]): number {
  return roundYuan(rows.reduce((s, r) => s + r.costYuan, 0));
}
