import { Injectable, Logger } from '@nestjs/common';
import type { Principal } from '@app/auth';
import { shareOf } from '../keys/key-scopes';
import { AdmittedCall, CallAdmission, RateHeaderSink } from '../limits/call-admission';
import { LedgerEntry, LedgerRepository } from './ledger.repository';
import { roundYuan, yuanText } from './pricing';
import { UsageStatus } from './usage-record.entity';

/** What one call holds of its key's and project's limits until it settles. */
export interface Reservation {
  keyId: string;
  /** Whose turn the call takes in what the replica shares out (ApiKeyClaims.share: the key's project, or the key). */
  share: string;
  /** Null when the key and its project have no limit checked per call. */
  admitted: AdmittedCall | null;
  settled: boolean;
  startedAt: number;
}

/** The worst case of a call, reserved before it runs. */
export interface CallHold {
  /** Public model name (per-model limits). */
  model: string;
  yuan: number;
  /** Input + output tokens (tokens per minute, token budgets); 0 for calls not priced in tokens. */
  tokens?: number;
  /** The HTTP response, for OpenAI's x-ratelimit-*-tokens headers (and to know when the call is over). */
  headers?: RateHeaderSink;
  /** Whether the call still runs, for calls without an HTTP response (a WebSocket session). */
  alive?: () => boolean;
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
  /** Tokens counted against tokens-per-minute limits and token budgets; default prompt + completion (cache hits that are not billed are not counted). */
  countedTokens?: number;
  seconds?: number;
  characters?: number;
  images?: number;
  httpStatus?: number;
  error?: string;
  requestId?: string | null;
}

/**
 * Every call: reserve its worst case against every limit of its key and project before calling (atomic,
 * so concurrent calls on any replica cannot pass a limit: CallAdmission), then settle with the real cost
 * and tokens and append a ledger entry.
 */
@Injectable()
export class MeteringService {
  private readonly log = new Logger('Metering');

  constructor(
    private readonly admission: CallAdmission,
    private readonly ledger: LedgerRepository,
  ) {}

  /** Reserves the call's worst case; 429 naming the limit (or `insufficient_quota`) when one cannot take it. */
  async reserve(principal: Principal, hold: CallHold): Promise<Reservation> {
    const tokens = Math.max(0, Math.ceil(hold.tokens ?? 0));
    const admitted = await this.admission.admit(
      principal,
      { model: hold.model, yuan: yuanText(Math.max(0, hold.yuan)), tokens },
      hold.headers,
      hold.alive,
    );
    return { keyId: principal.id, share: shareOf(principal), admitted, settled: false, startedAt: Date.now() };
  }

  /** What is left of the key's and its project's tightest yuan budget (null: none), and whether any budget is spent. */
  remaining(principal: Principal): Promise<{ yuan: number | null; exhausted: boolean }> {
    return this.admission.remaining(principal);
  }

  /** Releases the reservation, charges the cost and queues the ledger entry. Idempotent. */
  async settle(reservation: Reservation, outcome: CallOutcome): Promise<void> {
    if (reservation.settled) return;
    reservation.settled = true;
    const cost = outcome.status === 'failed' ? 0 : roundYuan(Math.max(0, outcome.costYuan));
    if (outcome.status === 'failed' && (outcome.httpStatus ?? 0) >= 500) {
      this.log.warn(
        {
          requestId: outcome.requestId,
          endpoint: outcome.endpoint,
          model: outcome.model,
          provider: outcome.provider,
          status: outcome.httpStatus,
        },
        `upstream call failed: ${outcome.error ?? 'unknown error'}`,
      );
    }
    if (reservation.admitted) {
      const tokens =
        outcome.status === 'failed'
          ? 0
          : Math.max(0, outcome.countedTokens ?? (outcome.promptTokens ?? 0) + (outcome.completionTokens ?? 0));
      await this.admission.settle(reservation.admitted, { yuan: yuanText(cost), tokens });
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
      // A call under a budget charged its key when it settled; any other is charged with the ledger write.
      chargeKey: !this.admission.chargesKey(reservation.admitted) && cost > 0,
    };
    this.ledger.append(entry);
  }
}
