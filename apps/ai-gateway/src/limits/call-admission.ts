import { randomUUID } from 'crypto';
import { Injectable, Logger, Optional } from '@nestjs/common';
import { Counter } from 'prom-client';
import type { Principal } from '@app/auth';
import { GatewayError, GatewayErrorCode } from '../errors';
import { Clock, Metrics, RedisSharedState, SharedState } from '@app/platform';
import { GatewayConfig } from '../config/gateway.config';
import type { ApiKeyClaims } from '../keys/key-scopes';
import { openAiDuration } from './openai-duration';
import { periodBounds } from './budget-period';
import {
  BudgetCounter,
  budgetSubject,
  decodeName,
  encodeName,
  LimitPlan,
  LimitSubject,
  planCall,
  planIsEmpty,
  planRequest,
  WindowCounter,
} from './call-limits';
import { ALLOWED, AdmitAnswer, SettleAnswer, WindowSettlement } from './limit-answer';
import { hasBudget, limitsCall } from './limit-set';
import { LimitsRepository } from './limits.repository';
import { RedisLimits } from './redis-limits';
import { HeldConnection, RefusalHold } from './refusal-hold';
import { SpentBudgets } from './spent-budgets';

/** Where the rate-limit headers go: the HTTP response, when there is one (a WebSocket has none). */
export interface RateHeaderSink {
  headersSent?: boolean;
  setHeader(name: string, value: string): unknown;
  getHeader?(name: string): unknown;
  /** An HTTP response: its call is over once it finished or was destroyed (no more renewals then). */
  writableFinished?: boolean;
  destroyed?: boolean;
}

/** A call's admission until it settles: what it reserved, under which hold. */
export interface AdmittedCall {
  hold: string;
  plan: LimitPlan;
  /** Bucket of the admission, per window (a token reservation is replaced in the bucket it was made in). */
  buckets: number[];
  keyId: string;
  /** The tenant whose limit statements go one round trip at a time (LimitsRepository): its project, else its key. */
  lane: string;
  settled: boolean;
  /** Renews the hold and leases while the call runs. */
  renewal?: NodeJS.Timeout;
  /** Whether the call still runs (its response or socket is open): a call that ended without settling stops renewing and expires. */
  alive?: () => boolean;
  /** The key's and project's concurrency counters (`conc:k:…`, `conc:p:…`) it counts in this replica until it ends. */
  localLeases?: string[];
}

/** A settlement is tried this many times (200 ms, then 800 ms apart): both stores settle a hold once. */
const SETTLE_ATTEMPTS = 3;

/**
 * Every limit of a key and of its project, checked and reserved together so that no limit is exceeded
 * with any number of replicas (apps/ai-gateway/src/limits/call-limits.ts plans the counters):
 * - `countRequest`, at authentication: the requests-per-minute windows (refused before the body is read).
 * - `admit`, once a call's cost is known: tokens per minute, concurrent calls, per-model limits and the
 *   budgets of the current period; `settle` replaces the reservation with the call's actual use.
 * - `refuseBeforeBody`, at authentication of a metered route: what this replica knows the shared state would
 *   refuse whatever the body (a used-up budget, every concurrent call of the key in use here), before the body
 *   is read, parsed and counted.
 * With PostgreSQL as the shared state each is one statement; with Redis, windows and leases are one script
 * and budgets (money, which must survive Redis) one PostgreSQL statement, run side by side.
 */
@Injectable()
export class CallAdmission {
  private readonly log = new Logger('Limits');
  private readonly redis: RedisLimits | null;
  private readonly alerts?: Counter<'scope' | 'event'>;
  private readonly refusedUntil = new RefusedUntil();
  private readonly spentBudgets = new SpentBudgets();
  /** Calls admitted in this replica and not yet ended, per key and project concurrency counter (`conc:k:…`). */
  private readonly leasesHeld = new Map<string, number>();

  constructor(
    state: SharedState,
    private readonly limits: LimitsRepository,
    private readonly config: GatewayConfig,
    private readonly clock: Clock,
    private readonly refusalHold: RefusalHold,
    @Optional() metrics?: Metrics,
  ) {
    this.redis = state.backend === 'redis' ? new RedisLimits(state as RedisSharedState) : null;
    if (metrics) {
      this.alerts =
        (metrics.registry.getSingleMetric('ai_budget_events_total') as Counter<'scope' | 'event'> | undefined) ??
        new Counter({
          name: 'ai_budget_events_total',
          help: 'Budgets that crossed their alert threshold or were spent, by scope (key, project) and event (threshold_reached, exhausted)',
          labelNames: ['scope', 'event'],
          registers: [metrics.registry],
        });
    }
  }

  /**
   * Counts a request in its key's and project's per-minute windows; writes the request headers; 429 when over.
   * A refusal is remembered in this replica until the moment the shared state named for a request to fit
   * again (RefusedUntil): the same 429 without asking it again, which gives the same answer.
   */
  async countRequest(
    claims: ApiKeyClaims,
    keyId: string,
    headers?: RateHeaderSink,
    connection?: HeldConnection,
  ): Promise<void> {
    const windows = planRequest(subjectsOf(claims, keyId));
    if (!windows.length) return;
    let now = Math.floor(this.clock.now());
    let known = this.refusedUntil.answer(keyId, windows, now);
    if (known) {
      // Refused already and calling again before the retry time: answered after a hold (RefusalHold), then
      // as the moment it is answered.
      const before = known;
      await this.refusalHold.hold(known.refused?.retry_ms ?? 0, connection);
      now = Math.floor(this.clock.now());
      known = this.refusedUntil.answer(keyId, windows, now);
      // A client gone during the hold is not counted in the window once its retry time came: refused as it was.
      if (!known && connection?.destroyed) known = before;
    }
    if (known) {
      writeHeaders(headers, windows, known);
      throw refusal(known, windows, [], claims);
    }
    const answer = this.redis
      ? await this.redis.admit(now, '', 0, windows, [])
      : await this.limits.admit(laneOf(claims, keyId), { now, hold: randomUUID(), hold_ttl_ms: 0, windows });
    writeHeaders(headers, windows, answer);
    if (!answer.allowed) {
      this.refusedUntil.remember(keyId, windows, now, answer);
      throw refusal(answer, windows, [], claims);
    }
  }

  /**
   * Reserves `yuan` and `tokens` of a call of `model` against every limit but the per-minute requests
   * (counted at authentication); 429 naming the limit that refused. Null when the key has no such limits.
   */
  async admit(
    principal: Principal,
    call: { model: string | null; yuan: string; tokens: number },
    headers?: RateHeaderSink,
    alive?: () => boolean,
  ): Promise<AdmittedCall | null> {
    const claims = principal.claims as ApiKeyClaims;
    if (!claims.limited) return null;
    const now = Math.floor(this.clock.now());
    const plan = planCall(subjectsOf(claims, principal.id), call, now, this.config.BUDGET_TIMEZONE);
    if (planIsEmpty(plan)) return null;
    const hold = randomUUID();
    const ttl = this.config.AI_BUDGET_HOLD_TTL_MS;
    const lane = laneOf(claims, principal.id);
    const answer = this.redis
      ? await this.admitBeside(this.redis, lane, now, hold, ttl, plan)
      : await this.limits.admit(lane, { now, hold, hold_ttl_ms: ttl, ...plan });
    writeHeaders(headers, plan.windows, answer);
    if (!answer.allowed) {
      this.spentBudgets.remember(plan.budgets, answer, now);
      throw refusal(answer, plan.windows, plan.budgets, claims, call.tokens);
    }
    const admitted: AdmittedCall = {
      hold,
      plan,
      buckets: plan.windows.map((w) => Math.floor(now / w.bucket_ms)),
      keyId: principal.id,
      lane,
      settled: false,
      alive:
        alive ??
        (headers && 'destroyed' in headers ? () => !headers.writableFinished && !headers.destroyed : undefined),
    };
    this.holdLocally(admitted, claims, principal.id);
    // A call may run longer than a hold lives (a long stream): it renews its hold and leases while it runs.
    admitted.renewal = setInterval(() => void this.renew(admitted), Math.max(1000, Math.floor(ttl / 3)));
    admitted.renewal.unref();
    return admitted;
  }

  /**
   * With Redis: windows and leases in one script, budgets in one PostgreSQL statement, side by side. When one
   * side refuses or fails, what the other reserved is given back (until then it only made others stricter);
   * a failure is then thrown as it came.
   */
  private async admitBeside(
    redis: RedisLimits,
    lane: string,
    now: number,
    hold: string,
    ttl: number,
    plan: LimitPlan,
  ): Promise<AdmitAnswer> {
    const rates = plan.windows.length > 0 || plan.leases.length > 0;
    const [w, b] = await Promise.allSettled([
      rates ? redis.admit(now, hold, ttl, plan.windows, plan.leases) : Promise.resolve(ALLOWED),
      plan.budgets.length
        ? this.limits.admit(lane, { now, hold, hold_ttl_ms: ttl, budgets: plan.budgets })
        : Promise.resolve(ALLOWED),
    ]);
    const ratesOk = w.status === 'fulfilled' && w.value.allowed;
    const budgetsOk = b.status === 'fulfilled' && b.value.allowed;
    if (!ratesOk || !budgetsOk) {
      const ratesHeld = rates && ratesOk;
      const budgetsHeld = plan.budgets.length > 0 && budgetsOk;
      try {
        if (ratesHeld)
          await redis.settle(
            now,
            hold,
            plan.windows.map((x) => released(x, now)),
            plan.leases,
          );
        if (budgetsHeld)
          await this.limits.settle(lane, {
            now,
            hold,
            budgets: plan.budgets.map((x) => ({ ...x, yuan: '0', tokens: 0 })),
          });
      } catch (e) {
        // Left to expire (AI_BUDGET_HOLD_TTL_MS): conservative, never more than the limits.
        this.log.error(`could not give back a partial reservation ${hold}: ${(e as Error).message}`);
      }
    }
    if (w.status === 'rejected') throw w.reason;
    if (b.status === 'rejected') throw b.reason;
    return { ...(w.value.allowed ? b.value : w.value), windows: w.value.windows };
  }

  /** Keeps a running call's hold and leases (CallAdmission.admit starts it every third of AI_BUDGET_HOLD_TTL_MS). */
  async renew(admitted: AdmittedCall): Promise<boolean> {
    if (admitted.settled) return false;
    if (admitted.alive && !admitted.alive()) {
      // Ended without settling (a fault on some path): it is left to expire and the sweep to give back.
      clearInterval(admitted.renewal);
      this.releaseLocally(admitted);
      this.log.warn(
        `call ${admitted.hold} ended without settling its limits; its hold expires in AI_BUDGET_HOLD_TTL_MS`,
      );
      return false;
    }
    const ttl = this.config.AI_BUDGET_HOLD_TTL_MS;
    try {
      const [a, b] = await Promise.all([
        this.redis
          ? this.redis.renew(Math.floor(this.clock.now()), admitted.hold, ttl, admitted.plan.leases)
          : this.limits.renew(admitted.hold, ttl),
        this.redis && admitted.plan.budgets.length ? this.limits.renew(admitted.hold, ttl) : true,
      ]);
      if (!a || !b) {
        this.log.warn(`call ${admitted.hold}: its hold was already released; its limits no longer count it`);
        // Nor does this replica's count of its concurrent calls (refuseBeforeBody never counts more than the store).
        this.releaseLocally(admitted);
      }
      return a && b;
    } catch (e) {
      this.log.error(`could not renew the hold of call ${admitted.hold}: ${(e as Error).message}`);
      return false;
    }
  }

  /**
   * Replaces the call's reservation with what it used (`yuan`, `tokens`: input + output), ends its leases and
   * charges its budgets (and its key's spent_yuan). Idempotent in the stores too (a settlement runs once per
   * hold), so a failed attempt is tried again (three attempts); it never throws: a settlement that cannot be
   * made is logged, and the sweep gives the holds back.
   */
  async settle(admitted: AdmittedCall, used: { yuan: string; tokens: number }): Promise<void> {
    if (admitted.settled) return;
    admitted.settled = true;
    clearInterval(admitted.renewal);
    this.releaseLocally(admitted);
    const { plan, hold, lane } = admitted;
    const windows: WindowSettlement[] = [];
    plan.windows.forEach((w, i) => {
      if (w.field === 'tokens_per_minute')
        windows.push({
          key: w.key,
          bucket: admitted.buckets[i],
          bucket_ms: w.bucket_ms,
          window_ms: w.window_ms,
          reserved: w.amount,
          actual: used.tokens,
        });
    });
    const budgets = plan.budgets.map((b) => ({ ...b, yuan: used.yuan, tokens: used.tokens }));
    const keyCharge = plan.budgets.length ? { key_id: admitted.keyId, key_yuan: used.yuan } : {};
    for (let attempt = 1; ; attempt++) {
      const now = Math.floor(this.clock.now());
      try {
        let answer: SettleAnswer | null = null;
        if (!this.redis)
          answer = await this.limits.settle(lane, { now, hold, windows, leases: plan.leases, budgets, ...keyCharge });
        else {
          const rates = plan.windows.length > 0 || plan.leases.length > 0;
          const [, b] = await Promise.all([
            rates ? this.redis.settle(now, hold, windows, plan.leases) : null,
            budgets.length ? this.limits.settle(lane, { now, hold, budgets, ...keyCharge }) : null,
          ]);
          answer = b;
        }
        if (answer) this.announce(answer, plan.budgets);
        return;
      } catch (e) {
        if (attempt >= SETTLE_ATTEMPTS) {
          this.log.error(`could not settle the limits of call ${hold} (${attempt} attempts): ${(e as Error).message}`);
          return;
        }
        await new Promise((r) => setTimeout(r, 200 * 4 ** (attempt - 1)));
      }
    }
  }

  /**
   * Before the body of a call to a metered route is read: the 429 the shared state would answer to any call of the
   * key now, when this replica knows it. A budget of the key or its project used up in this period (SpentBudgets,
   * remembered from an earlier refusal), or as many of the key's (or its project's) calls running in this replica
   * alone as its `max_concurrent_requests` (the shared state counts at least those: its lease count is at least
   * this replica's). Per-model limits and token windows need the body. Costs a map lookup or two for a limited key.
   */
  refuseBeforeBody(claims: ApiKeyClaims, keyId: string): void {
    if (!claims.limited) return;
    const subjects = subjectsOf(claims, keyId);
    for (const s of subjects) {
      const max = s.limits.maxConcurrentRequests;
      if (max === null || (this.leasesHeld.get(`conc:${budgetSubject(s.scope, s.id)}`) ?? 0) < max) continue;
      const name = encodeName({ scope: s.scope, subject: s.name, field: 'max_concurrent_requests', model: null });
      throw refusal(
        { allowed: false, refused: { name, kind: 'concurrency', retry_ms: 1000 }, windows: [] },
        [],
        [],
        claims,
      );
    }
    if (this.spentBudgets.empty || !subjects.some((s) => this.spentBudgets.has(budgetSubject(s.scope, s.id)))) return;
    const now = Math.floor(this.clock.now());
    const { budgets } = planCall(subjects, { model: null, yuan: '0', tokens: 0 }, now, this.config.BUDGET_TIMEZONE);
    const spent = this.spentBudgets.find(budgets, now);
    if (!spent) return;
    const retry_ms = spent.period_end === null ? null : Math.max(1, spent.period_end - now);
    throw refusal(
      { allowed: false, refused: { name: spent.name, kind: 'budget', retry_ms }, windows: [] },
      [],
      [spent],
      claims,
    );
  }

  /** Counts an admitted call in this replica's concurrency counters of its key and project (refuseBeforeBody). */
  private holdLocally(admitted: AdmittedCall, claims: ApiKeyClaims, keyId: string): void {
    if (!admitted.plan.leases.length) return;
    const counters: string[] = [];
    for (const s of subjectsOf(claims, keyId)) {
      if (s.limits.maxConcurrentRequests === null) continue;
      const key = `conc:${budgetSubject(s.scope, s.id)}`;
      this.leasesHeld.set(key, (this.leasesHeld.get(key) ?? 0) + 1);
      counters.push(key);
    }
    admitted.localLeases = counters;
  }

  private releaseLocally(admitted: AdmittedCall): void {
    const counters = admitted.localLeases;
    if (!counters) return;
    admitted.localLeases = undefined;
    for (const key of counters) {
      const n = (this.leasesHeld.get(key) ?? 1) - 1;
      if (n > 0) this.leasesHeld.set(key, n);
      else this.leasesHeld.delete(key);
    }
  }

  /** True when the call charged its key's spent_yuan itself (the key or its project has a budget). */
  chargesKey(admitted: AdmittedCall | null): boolean {
    return !!admitted && admitted.plan.budgets.length > 0;
  }

  /**
   * What is left of the tightest yuan budget of the key and its project in the current periods (null: no
   * yuan budget), and whether any budget (yuan or tokens) is already spent.
   */
  async remaining(principal: Principal): Promise<{ yuan: number | null; exhausted: boolean }> {
    const claims = principal.claims as ApiKeyClaims;
    const subjects = subjectsOf(claims, principal.id).filter((s) => hasBudget(s.limits));
    if (!subjects.length) return { yuan: null, exhausted: false };
    const now = this.clock.now();
    const periods = subjects.map((s) => ({
      s,
      subject: budgetSubject(s.scope, s.id),
      period_start: periodBounds(s.limits.budgetPeriod, now, this.config.BUDGET_TIMEZONE).start,
    }));
    const rows = await this.limits.usage(periods.map(({ subject, period_start }) => ({ subject, period_start })));
    let yuan: number | null = null;
    let exhausted = false;
    for (const { s, subject, period_start } of periods) {
      const row = rows.find((r) => r.subject === subject && Number(r.period_start) === period_start);
      // A key's lifetime usage that has no row yet starts from what the key spent (claims carry no spend): counted at admission.
      const spent = row ? Number(row.spent_yuan) + Number(row.reserved_yuan) : 0;
      const tokens = row ? Number(row.spent_tokens) + Number(row.reserved_tokens) : 0;
      if (s.limits.budgetYuan !== null) {
        const left = Math.max(0, Number(s.limits.budgetYuan) - spent);
        yuan = yuan === null ? left : Math.min(yuan, left);
        if (left <= 0) exhausted = true;
      }
      if (s.limits.budgetTokens !== null && tokens >= s.limits.budgetTokens) exhausted = true;
    }
    return { yuan, exhausted };
  }

  /** Frees budget holds of calls that never settled (a replica that died); answers how many. */
  sweep(): Promise<number> {
    return this.limits.sweep();
  }

  private announce(answer: SettleAnswer, budgets: BudgetCounter[]): void {
    for (const [event, subjects] of [
      ['threshold_reached', answer.alerts],
      ['exhausted', answer.exhausted],
    ] as const) {
      for (const subject of subjects) {
        const b = budgets.find((x) => x.subject === subject);
        const name = b ? decodeName(b.name) : null;
        const scope = subject.startsWith('p:') ? 'project' : 'key';
        this.alerts?.inc({ scope, event });
        this.log.warn(
          { subject, event, period_start: b ? new Date(b.period_start).toISOString() : undefined },
          `budget ${event === 'exhausted' ? 'spent' : 'alert threshold reached'}: ${scope} ${name?.subject ?? subject}`,
        );
      }
    }
  }
}

/**
 * A call's tenant for LimitsRepository's lanes: its project when the project has limits of its own (its keys'
 * calls then lock the project's counters together), else its key (a project without limits locks nothing
 * its keys share).
 */
export function laneOf(claims: ApiKeyClaims, keyId: string): string {
  const p = claims.project;
  return p && (p.limits.requestsPerMinute !== null || limitsCall(p.limits)) ? `p:${p.id}` : `k:${keyId}`;
}

/** The key, then its project, as limit subjects. */
export function subjectsOf(claims: ApiKeyClaims, keyId: string): LimitSubject[] {
  const subjects: LimitSubject[] = [{ scope: 'key', id: keyId, name: claims.name, limits: claims.limits }];
  if (claims.project)
    subjects.push({
      scope: 'project',
      id: claims.project.id,
      name: claims.project.name,
      limits: claims.project.limits,
    });
  return subjects;
}

/** A window's reservation given back: requests and tokens alike. */
function released(w: WindowCounter, now: number): WindowSettlement {
  return {
    key: w.key,
    bucket: Math.floor(now / w.bucket_ms),
    bucket_ms: w.bucket_ms,
    window_ms: w.window_ms,
    reserved: w.amount,
    actual: 0,
  };
}

/**
 * OpenAI's x-ratelimit-{limit,remaining,reset}-{requests,tokens}: of each kind the window with the least
 * left (every answer, refusals and streams included, carries them; the admission writes a kind again only
 * when its window is tighter than what the request count at authentication wrote).
 */
function writeHeaders(sink: RateHeaderSink | undefined, windows: WindowCounter[], answer: AdmitAnswer): void {
  if (!sink || sink.headersSent || typeof sink.setHeader !== 'function') return;
  for (const kind of ['requests', 'tokens'] as const) {
    let tightest: AdmitAnswer['windows'][number] | undefined;
    answer.windows.forEach((w, i) => {
      if ((kind === 'requests') !== (windows[i].field === 'requests_per_minute')) return;
      if (!tightest || w.limit - w.used < tightest.limit - tightest.used) tightest = w;
    });
    if (!tightest) continue;
    // The request count at authentication wrote its headers first: a per-model window replaces them only when tighter.
    const written = Number(sink.getHeader?.(`x-ratelimit-remaining-${kind}`) ?? NaN);
    if (Number.isFinite(written) && written <= tightest.limit - tightest.used) continue;
    sink.setHeader(`x-ratelimit-limit-${kind}`, String(tightest.limit));
    sink.setHeader(`x-ratelimit-remaining-${kind}`, String(Math.max(0, tightest.limit - tightest.used)));
    sink.setHeader(`x-ratelimit-reset-${kind}`, openAiDuration(tightest.reset_ms));
  }
}

function whose(scope: 'key' | 'project', subject: string, model: string | null): string {
  const who = scope === 'key' ? `API key "${subject}"` : `project "${subject}"`;
  return model === null ? who : `${who} for model ${model}`;
}

function refusal(
  answer: AdmitAnswer,
  windows: WindowCounter[],
  budgets: BudgetCounter[],
  claims: ApiKeyClaims,
  tokens = 0,
): GatewayError {
  const refused = answer.refused!;
  const name = decodeName(refused.name);
  const of = whose(name.scope, name.subject, name.model);
  const seconds = refused.retry_ms === null ? 0 : Math.max(1, Math.ceil(refused.retry_ms / 1000));
  if (refused.kind === 'budget') {
    const b = budgets.find((x) => x.name === refused.name)!;
    return new GatewayError(GatewayErrorCode.BudgetExhausted, {
      of,
      period: b.period,
      ...(refused.retry_ms === null ? {} : { retryAfterSeconds: seconds }),
    });
  }
  const i = windows.findIndex((w) => w.name === refused.name);
  if (refused.kind === 'window' && name.field === 'tokens_per_minute') {
    const w = windows[i];
    if (refused.retry_ms === null)
      return new GatewayError(GatewayErrorCode.RequestTooLarge, { of, max: w.limit, requested: tokens });
    return new GatewayError(GatewayErrorCode.TokenRateLimited, {
      of,
      max: w.limit,
      used: answer.windows[i]?.used ?? 0,
      requested: tokens,
      retryAfterSeconds: seconds,
    });
  }
  const max = refused.kind === 'window' ? windows[i].limit : leaseLimit(claims, name);
  return new GatewayError(GatewayErrorCode.RateLimited, {
    of,
    limit: refused.kind === 'window' ? 'requests_per_minute' : 'max_concurrent_requests',
    max,
    retryAfterSeconds: seconds,
  });
}

function leaseLimit(claims: ApiKeyClaims, name: ReturnType<typeof decodeName>): number {
  const limits = name.scope === 'key' ? claims.limits : claims.project!.limits;
  return (
    (name.model === null ? limits.maxConcurrentRequests : limits.modelLimits?.[name.model]?.max_concurrent_requests) ??
    0
  );
}

/**
 * Requests-per-minute refusals remembered per key in this replica, until the time the shared state gave for
 * a request to fit again. It never admits a request the shared state would refuse, and refuses none it would
 * admit, with any number of replicas: a request window only grows (every replica adds to it, nothing takes
 * from it) until its oldest buckets leave it, and the retry time the shared state answers is the moment the
 * first bucket that makes room leaves (ai_limits_admit, redis-limits.ts); before it, the shared state refuses
 * every request of the key. Two cases only make it stricter than the store, never looser, for at most the rest
 * of that window: a replica whose clock runs behind another's by d refuses up to d longer; a store that lost its
 * windows (a Redis restart) would admit at once. The x-ratelimit-* headers are those of the refusal (its
 * tightest window then), with the reset time of now. A change of the key's windows (its limits, its
 * project's) is a different entry. Entries end at their time; at most MAX_REMEMBERED keys are kept.
 */
export class RefusedUntil {
  static readonly MAX_REMEMBERED = 10_000;
  private readonly refused = new Map<string, { windows: string; until: number; answer: AdmitAnswer }>();

  /** The refusal the shared state would answer now, with this moment's reset and retry times; null when unknown. */
  answer(keyId: string, windows: WindowCounter[], now: number): AdmitAnswer | null {
    const known = this.refused.get(keyId);
    if (!known) return null;
    if (now >= known.until || known.windows !== shape(windows)) {
      this.refused.delete(keyId);
      return null;
    }
    return {
      allowed: false,
      refused: { ...known.answer.refused!, retry_ms: known.until - now },
      windows: known.answer.windows.map((w, i) =>
        windows[i]
          ? {
              ...w,
              reset_ms:
                (Math.floor(now / windows[i].bucket_ms) + 1) * windows[i].bucket_ms + windows[i].window_ms - now,
            }
          : w,
      ),
    };
  }

  /** Keeps a window refusal that waiting ends (a retry time); others are asked of the shared state each time. */
  remember(keyId: string, windows: WindowCounter[], now: number, answer: AdmitAnswer): void {
    const retry = answer.refused?.kind === 'window' ? answer.refused.retry_ms : null;
    if (retry === null || retry === undefined || retry <= 0) return;
    if (!this.refused.has(keyId) && this.refused.size >= RefusedUntil.MAX_REMEMBERED) {
      for (const [key, entry] of this.refused) if (entry.until <= now) this.refused.delete(key);
      if (this.refused.size >= RefusedUntil.MAX_REMEMBERED) this.refused.delete(this.refused.keys().next().value!);
    }
    this.refused.set(keyId, { windows: shape(windows), until: now + retry, answer });
  }

  /** Keys remembered (read by tests). */
  get size(): number {
    return this.refused.size;
  }
}

/** The windows a refusal was given for: their counters and limits. */
function shape(windows: WindowCounter[]): string {
  return windows
    .map((w) => `${w.key}\u0000${w.name}\u0000${w.limit}\u0000${w.window_ms}\u0000${w.bucket_ms}`)
    .join('\u0001');
}
