import { Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { randomUUID } from 'crypto';
import { hostname } from 'os';
import type { BlockList } from 'net';
import { Webhook } from 'standardwebhooks';
import { addressAllowList, BaseConfig, Clock } from '@app/platform';
import { retryDelayMs } from './webhook-backoff';
import { AttemptOutcome, ClaimedDelivery, WebhookDeliveriesRepository } from './webhook-deliveries.repository';
import { allowedCidrs } from './webhook-endpoints.service';
import { WebhookSecrets } from './webhook-secrets';
import { sendDelivery } from './webhook-sender';

/** Attempts a replica runs at once. */
const BATCH = 10;
/** Attempts of one endpoint a replica runs at once: a slow endpoint holds at most half of the slots. */
const PER_ENDPOINT = BATCH / 2;
const SWEEP_EVERY_MS = 60 * 60_000;
const DAY_MS = 86_400_000;

/**
 * Sends due deliveries, on every replica (WEBHOOK_WORKER): claims a batch under a lease
 * (webhook-deliveries.repository.ts), signs each per Standard Webhooks with the endpoint's secret, and
 * records the outcome only while it still holds the lease. Failures retry with exponential backoff and
 * jitter (webhook-backoff.ts) until WEBHOOK_RETRY_HOURS after the event, then the endpoint is disabled.
 * Up to BATCH attempts run at once, each slot claimed again as soon as its attempt ends (a slow attempt holds its
 * slot, not the others'), claims shared out between endpoints (WebhookDeliveriesRepository.claim) and at most
 * PER_ENDPOINT attempts of one endpoint at once. At start and hourly it sweeps
 * events whose deliveries all finished more than WEBHOOK_RETENTION_DAYS ago (WebhookDeliveriesRepository.sweep).
 * Schedules read the platform Clock, so tests move time instead of waiting.
 */
@Injectable()
export class WebhookDeliveryWorker implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly log = new Logger('Webhooks');
  private readonly replica = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  private readonly stop = new AbortController();
  private readonly allowed: BlockList | undefined;
  private timer?: NodeJS.Timeout;
  private sweepTimer?: NodeJS.Timeout;
  private running: Promise<void> | null = null;
  private sweeping: Promise<number> | null = null;

  constructor(
    private readonly deliveries: WebhookDeliveriesRepository,
    private readonly secrets: WebhookSecrets,
    private readonly config: BaseConfig,
    private readonly clock: Clock,
  ) {
    this.allowed = addressAllowList(allowedCidrs(config));
  }

  onApplicationBootstrap(): void {
    if (!this.config.WEBHOOK_WORKER) return;
    this.timer = setInterval(() => void this.tick(), this.config.WEBHOOK_POLL_MS);
    this.timer.unref();
    this.sweepTimer = setInterval(() => void this.sweep(), SWEEP_EVERY_MS);
    this.sweepTimer.unref();
    void this.sweep(); // a replica restarted more often than hourly still sweeps
  }

  /** One pass unless one is running: claims and sends until nothing is due. */
  tick(): Promise<void> {
    this.running ??= this.drain().finally(() => (this.running = null));
    return this.running;
  }

  /**
   * One retention sweep unless one is running: drops the events (and their deliveries and attempts) whose
   * deliveries all finished before now (the Clock) minus WEBHOOK_RETENTION_DAYS. Answers how many events went.
   */
  sweep(): Promise<number> {
    this.sweeping ??= this.sweepOnce().finally(() => (this.sweeping = null));
    return this.sweeping;
  }

  private async sweepOnce(): Promise<number> {
    try {
      const days = this.config.WEBHOOK_RETENTION_DAYS;
      const n = await this.deliveries.sweep(new Date(this.clock.now() - days * DAY_MS), undefined, this.stop.signal);
      if (n) this.log.log(`dropped ${n} webhook event(s) whose deliveries finished more than ${days} days ago`);
      return n;
    } catch (e) {
      if (!this.stop.signal.aborted) this.log.error(`webhook retention sweep failed: ${(e as Error).message}`);
      return 0;
    }
  }

  private async drain(): Promise<void> {
    const running = new Set<Promise<void>>();
    const perEndpoint = new Map<string, number>();
    try {
      while (!this.stop.signal.aborted) {
        const room = BATCH - running.size;
        if (room > 0) {
          const full = [...perEndpoint].filter(([, n]) => n >= PER_ENDPOINT).map(([id]) => id);
          const claimed = await this.deliveries.claim(
            new Date(this.clock.now()),
            this.config.WEBHOOK_LEASE_MS,
            room,
            full,
          );
          for (const d of claimed) {
            perEndpoint.set(d.endpoint_id, (perEndpoint.get(d.endpoint_id) ?? 0) + 1);
            const attempt: Promise<void> = this.attempt(d)
              .catch((e: unknown) => {
                if (!this.stop.signal.aborted)
                  this.log.error(`webhook delivery ${d.id} failed: ${(e as Error).message}`);
              })
              .finally(() => {
                running.delete(attempt);
                const n = (perEndpoint.get(d.endpoint_id) ?? 1) - 1;
                if (n > 0) perEndpoint.set(d.endpoint_id, n);
                else perEndpoint.delete(d.endpoint_id);
              });
            running.add(attempt);
          }
        }
        // Nothing due and nothing running: the pass is over (the next poll starts another).
        if (running.size === 0) return;
        // A slot frees as soon as one attempt ends, and is claimed again at once. While slots are free, deliveries
        // that fall due meanwhile are claimed at the next poll, not after the running attempts (slow ones take up
        // to WEBHOOK_TIMEOUT_MS): this pass holds the worker's turn (tick).
        if (running.size < BATCH) await Promise.race([...running, this.pollWait()]);
        else await Promise.race(running);
      }
    } catch (e) {
      if (!this.stop.signal.aborted) this.log.error(`webhook delivery pass failed: ${(e as Error).message}`);
    } finally {
      await Promise.allSettled(running);
    }
  }

  /** WEBHOOK_POLL_MS, or less if the worker stops; keeps no process up. */
  private pollWait(): Promise<void> {
    return new Promise((resolve) => {
      const signal = this.stop.signal;
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, this.config.WEBHOOK_POLL_MS);
      timer.unref();
      signal.addEventListener('abort', done, { once: true });
    });
  }

  private async attempt(d: ClaimedDelivery): Promise<void> {
    const startedAt = new Date(this.clock.now());
    const began = process.hrtime.bigint();
    const secret = this.secrets.open(d.secret_sealed, d.endpoint_id);
    const body = JSON.stringify(d.payload);
    let result: { status: number | null; error: string | null };
    if (!secret) {
      result = { status: null, error: 'the endpoint secret cannot be opened (WEBHOOK_ENCRYPTION_SECRET changed?)' };
    } else {
      // webhook-timestamp is the wall-clock send time: receivers compare it with their own clock (replay window).
      const signature = new Webhook(secret).sign(d.event_id, new Date(), body);
      const timestamp = Math.floor(Date.now() / 1000).toString();
      result = await sendDelivery(
        d.url,
        body,
        { 'webhook-id': d.event_id, 'webhook-timestamp': timestamp, 'webhook-signature': signature },
        {
          allowed: this.allowed,
          timeoutMs: this.config.WEBHOOK_TIMEOUT_MS,
          maxResponseBytes: this.config.WEBHOOK_MAX_RESPONSE_BYTES,
          signal: this.stop.signal,
        },
      );
    }
    // A replica stopping mid-delivery leaves the lease to expire: another replica retries it then.
    if (this.stop.signal.aborted) return;
    const outcome: AttemptOutcome = {
      ...result,
      startedAt,
      durationMs: Number((process.hrtime.bigint() - began) / 1_000_000n),
      replica: this.replica,
    };
    if (result.error === null) {
      await this.deliveries.delivered(d, outcome);
      return;
    }
    const now = this.clock.now();
    const next = now + retryDelayMs(d.attempts, this.config.WEBHOOK_BACKOFF_BASE_MS);
    const giveUpAt = d.give_up_at
      ? new Date(d.give_up_at).getTime()
      : new Date(d.created_at).getTime() + this.config.WEBHOOK_RETRY_HOURS * 3_600_000;
    if (next >= giveUpAt) {
      if (await this.deliveries.gaveUp(d, outcome))
        this.log.warn(`webhook delivery ${d.id} (${d.event_id}) failed for good; endpoint ${d.endpoint_id} disabled`);
      return;
    }
    await this.deliveries.retryAt(d, outcome, new Date(next));
  }

  async onApplicationShutdown(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    if (this.sweepTimer) clearInterval(this.sweepTimer);
    this.stop.abort();
    await Promise.all([this.running, this.sweeping]);
  }
}
