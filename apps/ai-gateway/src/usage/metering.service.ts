import { Injectable, Logger } from '@nestjs/common';
import type { Principal } from '@app/auth';
import { GatewayError, GatewayErrorCode } from '@app/envelope';
import { GatewayConfig } from '../config/gateway.config';
import { ApiKeysRepository } from '../keys/api-keys.repository';
import { ApiKeyClaims } from '../keys/key-scopes';
import { LedgerEntry, LedgerWriter } from './ledger.writer';
import { roundYuan, yuanText } from './pricing';
import { UsageStatus } from './usage-record.entity';

/** Budget held for one call until it settles. */
export interface Reservation {
  keyId: string;
  amount: string;
  /** Row in ai_budget_holds (budgeted keys only). */
  holdId: string | null;
  settled: boolean;
  startedAt: number;
}

export interface CallOutcome {
  endpoint: string;
  model: string;
  provider?: string | null;
  status: UsageStatus;
  /** Yuan actually charged (0 for failed calls). */
  costYuan: number;
  promptTokens?: number;
  completionTokens?: number;
  seconds?: number;
  characters?: number;
  images?: number;
  httpStatus?: number;
  error?: string;
  requestId?: string | null;
}

/**
 * Every call: reserve its worst-case cost before calling (atomic, so concurrent calls cannot
 * overspend), then settle with the real cost and append a ledger entry.
 */
@Injectable()
export class MeteringService {
  private readonly log = new Logger('Metering');

  constructor(
    private readonly keys: ApiKeysRepository,
    private readonly ledger: LedgerWriter,
    private readonly config: GatewayConfig,
  ) {}

  /** Holds `maxCostYuan` of the key's budget; 429 `insufficient_quota` when it cannot be covered. */
  async reserve(principal: Principal, maxCostYuan: number): Promise<Reservation> {
    const claims = principal.claims as ApiKeyClaims;
    if (!claims.hasBudget) return { keyId: principal.id, amount: yuanText(0), holdId: null, settled: false, startedAt: Date.now() };
    const amount = yuanText(Math.max(0, maxCostYuan));
    const holdId = await this.keys.reserve(principal.id, amount, this.config.AI_BUDGET_HOLD_TTL_MS);
    if (!holdId) throw new GatewayError(GatewayErrorCode.InsufficientQuota);
    return { keyId: principal.id, amount, holdId, settled: false, startedAt: Date.now() };
  }

  /** Remaining budget in yuan, or null without a budget. */
  async remaining(principal: Principal): Promise<number | null> {
    const claims = principal.claims as ApiKeyClaims;
    if (!claims.hasBudget) return null;
    const r = await this.keys.remaining(principal.id);
    return r === null ? null : Math.max(0, Number(r));
  }

  /** Releases the reservation, charges the cost and queues the ledger entry. Idempotent. */
  async settle(reservation: Reservation, outcome: CallOutcome): Promise<void> {
    if (reservation.settled) return;
    reservation.settled = true;
    const cost = outcome.status === 'failed' ? 0 : roundYuan(Math.max(0, outcome.costYuan));
    if (outcome.status === 'failed' && (outcome.httpStatus ?? 0) >= 500) {
      this.log.warn({ requestId: outcome.requestId, endpoint: outcome.endpoint, model: outcome.model, provider: outcome.provider, status: outcome.httpStatus }, `upstream call failed: ${outcome.error ?? 'unknown error'}`);
    }
    if (reservation.holdId) {
      try {
        await this.keys.settle(reservation.keyId, reservation.holdId, yuanText(cost));
      } catch (e) {
        this.log.error(`could not settle key ${reservation.keyId}: ${(e as Error).message}`);
      }
    }
    const entry: LedgerEntry = {
      keyId: reservation.keyId,
      endpoint: outcome.endpoint,
      model: outcome.model,
      provider: outcome.provider ?? null,
      promptTokens: outcome.promptTokens ?? 0,
      completionTokens: outcome.completionTokens ?? 0,
      seconds: String(outcome.seconds ?? 0),
      characters: outcome.characters ?? 0,
      images: outcome.images ?? 0,
      calls: 1,
      costYuan: yuanText(cost),
      status: outcome.status,
      httpStatus: outcome.httpStatus ?? null,
      error: outcome.error ? outcome.error.slice(0, 500) : null,
      latencyMs: Date.now() - reservation.startedAt,
      requestId: outcome.requestId ?? null,
      // Without a hold the key is charged with the ledger write.
      chargeKey: !reservation.holdId && cost > 0,
    };
    this.ledger.append(entry);
  }
}
