import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { AuditLog, systemContext } from '@app/audit';
import { returnedRows } from '@app/database';
import { WEBHOOK_OPTIONS, WebhookOptions, webhookTables } from './webhook-options';

/** A delivery a replica holds: what it needs to send it, and the token that fences its outcome. */
export interface ClaimedDelivery {
  id: string;
  event_id: string;
  endpoint_id: string;
  attempts: number;
  lease_token: string;
  created_at: Date;
  give_up_at: Date | null;
  url: string;
  secret_sealed: string;
  payload: unknown;
}

export interface AttemptOutcome {
  status: number | null;
  error: string | null;
  startedAt: Date;
  durationMs: number;
  replica: string;
}

/** The delivery worker's queries (webhook-delivery.worker.ts). */
@Injectable()
export class WebhookDeliveriesRepository {
  private readonly t: ReturnType<typeof webhookTables>;

  constructor(
    @InjectDataSource() private readonly db: DataSource,
    @Inject(WEBHOOK_OPTIONS) options: WebhookOptions,
    private readonly audit: AuditLog,
  ) {
    this.t = webhookTables(options.tablePrefix);
  }

  /**
   * Claims up to `limit` due deliveries of enabled endpoints: SKIP LOCKED lets replicas claim
   * different rows at once, and the lease (lease_until, a new lease_token) keeps a claimed row from
   * every other replica until it expires, so an attempt that outlives its replica (killed) is retried
   * after WEBHOOK_LEASE_MS and no two attempts of one delivery overlap while the lease exceeds the
   * delivery timeout (BaseConfig.validateExtra).
   */
  async claim(now: Date, leaseMs: number, limit: number): Promise<ClaimedDelivery[]> {
    const result: unknown = await this.db.query(
      `WITH due AS (
         SELECT d.id FROM ${this.t.deliveries} d JOIN ${this.t.endpoints} e ON e.id = d.endpoint_id AND e.enabled
          WHERE d.status = 'pending' AND d.next_attempt_at <= $1 AND (d.lease_until IS NULL OR d.lease_until <= $1)
          ORDER BY d.next_attempt_at, d.id LIMIT $3
          FOR UPDATE OF d SKIP LOCKED)
       UPDATE ${this.t.deliveries} d SET lease_until = $2, lease_token = gen_random_uuid(), attempts = d.attempts + 1, last_attempt_at = $1
         FROM due, ${this.t.endpoints} e, ${this.t.events} ev
        WHERE d.id = due.id AND e.id = d.endpoint_id AND ev.id = d.event_id
        RETURNING d.id, d.event_id, d.endpoint_id, d.attempts, d.lease_token, d.created_at, d.give_up_at, e.url, e.secret_sealed, ev.payload`,
      [now, new Date(now.getTime() + leaseMs), limit],
    );
    return returnedRows<ClaimedDelivery>(result);
  }

  /** Delivered: done. False when the lease was lost meanwhile (another replica owns the delivery now). */
  delivered(d: ClaimedDelivery, outcome: AttemptOutcome): Promise<boolean> {
    return this.finish(d, outcome, `status = 'delivered', delivered_at = $3`, [outcome.startedAt]);
  }

  /** Failed: due again at `next`. */
  retryAt(d: ClaimedDelivery, outcome: AttemptOutcome, next: Date): Promise<boolean> {
    return this.finish(d, outcome, `next_attempt_at = $3`, [next]);
  }

  /** Failed past the retry window: the delivery fails for good and its endpoint is disabled (recorded in the audit log). */
  gaveUp(d: ClaimedDelivery, outcome: AttemptOutcome): Promise<boolean> {
    return this.db.transaction(async (m) => {
      const ok = await this.finish(d, outcome, `status = 'failed'`, [], m);
      if (!ok) return false;
      const reason =
        `a delivery (${d.event_id}) failed for the whole retry window after ${d.attempts} attempts: ${outcome.error ?? 'no answer'}`.slice(
          0,
          500,
        );
      const [endpoint] = returnedRows<{ id: string }>(
        await m.query(
          `UPDATE ${this.t.endpoints} SET enabled = false, disabled_reason = $2, updated_at = now() WHERE id = $1 AND enabled RETURNING id, url`,
          [d.endpoint_id, reason],
        ),
      );
      if (endpoint) {
        await this.audit.record(m, {
          ...systemContext(),
          action: 'webhook_endpoint.disabled',
          target: { type: 'webhook_endpoint', id: d.endpoint_id },
          before: { enabled: true },
          after: { enabled: false, reason },
        });
      }
      return true;
    });
  }

  private async finish(
    d: ClaimedDelivery,
    o: AttemptOutcome,
    set: string,
    params: unknown[],
    m: Pick<DataSource, 'query'> = this.db,
  ): Promise<boolean> {
    const rows = returnedRows(
      await m.query(
        `UPDATE ${this.t.deliveries} SET ${set}, lease_until = NULL, lease_token = NULL, last_status = $${params.length + 3}, last_error = $${params.length + 4}
        WHERE id = $1 AND lease_token = $2 RETURNING id`,
        [d.id, d.lease_token, ...params, o.status, o.error],
      ),
    );
    if (!rows.length) return false;
    await m.query(
      `INSERT INTO ${this.t.attempts} (delivery_id, attempt, replica, started_at, duration_ms, status, error) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
      [d.id, d.attempts, o.replica, o.startedAt, o.durationMs, o.status, o.error],
    );
    return true;
  }
}
