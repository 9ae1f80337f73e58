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
   * Claims up to `limit` due deliveries of enabled endpoints, shared out between endpoints: each endpoint's
   * oldest due delivery comes before any endpoint's second, and so on (the per-endpoint due index,
   * webhook-migrations.ts), so an endpoint with a backlog takes at most its fair share of a batch while others
   * have deliveries due, and the whole batch when none has. SKIP LOCKED lets replicas claim different rows at
   * once, and the lease (lease_until, a new lease_token) keeps a claimed row from every other replica until it
   * expires, so an attempt that outlives its replica (killed) is retried after WEBHOOK_LEASE_MS and no two
   * attempts of one delivery overlap while the lease exceeds the delivery timeout (BaseConfig.validateExtra).
   * `skip`: endpoints the caller has enough attempts of in flight already (none of theirs is claimed).
   */
  async claim(now: Date, leaseMs: number, limit: number, skip: readonly string[] = []): Promise<ClaimedDelivery[]> {
    const result: unknown = await this.db.query(
      `WITH candidates AS (
         SELECT c.id, c.turn, c.next_attempt_at FROM ${this.t.endpoints} e
          CROSS JOIN LATERAL (
            SELECT d.id, d.next_attempt_at, row_number() OVER (ORDER BY d.next_attempt_at, d.id) AS turn
              FROM ${this.t.deliveries} d
             WHERE d.endpoint_id = e.id AND d.status = 'pending' AND d.next_attempt_at <= $1
               AND (d.lease_until IS NULL OR d.lease_until <= $1)
             ORDER BY d.next_attempt_at, d.id LIMIT $4) c
          WHERE e.enabled AND NOT (e.id = ANY($5::uuid[]))
          ORDER BY c.turn, c.next_attempt_at, c.id LIMIT $4),
       due AS (
         SELECT d.id FROM ${this.t.deliveries} d JOIN candidates c ON c.id = d.id
          WHERE d.status = 'pending' AND d.next_attempt_at <= $1 AND (d.lease_until IS NULL OR d.lease_until <= $1)
          ORDER BY c.turn, c.next_attempt_at, c.id LIMIT $3
          FOR UPDATE OF d SKIP LOCKED)
       UPDATE ${this.t.deliveries} d SET lease_until = $2, lease_token = gen_random_uuid(), attempts = d.attempts + 1, last_attempt_at = $1
         FROM due, ${this.t.endpoints} e, ${this.t.events} ev
        WHERE d.id = due.id AND e.id = d.endpoint_id AND ev.id = d.event_id
        RETURNING d.id, d.event_id, d.endpoint_id, d.attempts, d.lease_token, d.created_at, d.give_up_at, e.url, e.secret_sealed, ev.payload`,
      // Twice the batch as candidates: rows another replica is claiming this instant are skipped, not waited for.
      [now, new Date(now.getTime() + leaseMs), limit, limit * 2, skip],
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

  /**
   * Failed past the retry window: the delivery fails for good and its endpoint is disabled (recorded in the audit
   * log); the endpoint's other pending deliveries are paused with it (out of the due set until it is enabled again)
   * by the trigger on its flag (webhook-migrations.ts createWebhookPauseTrigger).
   */
  gaveUp(d: ClaimedDelivery, outcome: AttemptOutcome): Promise<boolean> {
    return this.db.transaction(async (m) => {
      // The endpoint's row first, as an admin's change of it does (webhook-endpoints.repository.ts update): two of
      // its deliveries giving up in one batch then take their turns instead of each holding its own row while
      // waiting for the other's (pausing). NO KEY: enqueues (a foreign key's share lock) are not held up.
      await m.query(`SELECT id FROM ${this.t.endpoints} WHERE id = $1 FOR NO KEY UPDATE`, [d.endpoint_id]);
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

  /**
   * The retention sweep: drops each event (with its deliveries and their attempts, ON DELETE CASCADE) whose
   * deliveries are all finished (delivered, failed, or paused by a disabled endpoint) and were last touched
   * before `cutoff`, `batch` events per statement so no statement holds its locks long; events being swept by
   * another replica are skipped. It first pauses pending deliveries of disabled endpoints that an enqueue
   * committed while the endpoint was being disabled. Answers how many events went.
   *
   * An event goes only when every one of its deliveries is locked here and still finished: the lock reads a row
   * changed since the statement began (a redelivery or an enabled endpoint made it pending) again and drops it,
   * and skips one being changed now, so the event stays; a change that comes after the lock waits for the delete
   * and finds no row (webhook-endpoints.repository.ts redeliver: NOT_FOUND). Checking the statement's snapshot
   * alone deleted a delivery whose redelivery committed meanwhile.
   */
  async sweep(cutoff: Date, batch = 1000, stop?: AbortSignal): Promise<number> {
    await this.db.query(
      `UPDATE ${this.t.deliveries} SET status = 'paused' WHERE id IN (
         SELECT d.id FROM ${this.t.deliveries} d JOIN ${this.t.endpoints} e ON e.id = d.endpoint_id
          WHERE NOT e.enabled AND d.status = 'pending'
          FOR UPDATE OF d SKIP LOCKED)`,
    );
    let total = 0;
    // Keyset order (created_at, id): each statement goes on after the last event the one before looked at, so
    // events that must stay (a pending delivery, a recent attempt) are read once per sweep, not once a statement.
    // (The time goes and comes back as text: a Date would drop its microseconds, and start the next one early.)
    let after: { at: string; id: string } | null = null;
    while (!stop?.aborted) {
      const rows: SweepStep[] = returnedRows<SweepStep>(
        await this.db.query(
          `WITH scanned AS (
             SELECT ev.id, ev.created_at FROM ${this.t.events} ev
              WHERE ev.created_at < $1 AND ($3::timestamptz IS NULL OR (ev.created_at, ev.id) > ($3, $4))
              ORDER BY ev.created_at, ev.id LIMIT $2),
           finished AS (
             SELECT d.id FROM ${this.t.deliveries} d JOIN scanned s ON s.id = d.event_id
              WHERE d.status <> 'pending' AND GREATEST(d.created_at, d.next_attempt_at, d.last_attempt_at, d.delivered_at) < $1
              FOR UPDATE OF d SKIP LOCKED),
           gone AS (
             DELETE FROM ${this.t.events} WHERE id IN (
               SELECT ev.id FROM ${this.t.events} ev JOIN scanned s ON s.id = ev.id
                WHERE NOT EXISTS (
                        SELECT 1 FROM ${this.t.deliveries} d WHERE d.event_id = ev.id AND d.id NOT IN (SELECT id FROM finished))
                FOR UPDATE OF ev SKIP LOCKED)
             RETURNING id),
           last AS (SELECT created_at, id FROM scanned ORDER BY created_at DESC, id DESC LIMIT 1)
           SELECT (SELECT count(*) FROM gone)::int AS deleted, (SELECT count(*) FROM scanned)::int AS scanned,
                  (SELECT created_at::text FROM last) AS last_at, (SELECT id FROM last) AS last_id`,
          [cutoff, batch, after?.at ?? null, after?.id ?? null],
        ),
      );
      const r: SweepStep = rows[0];
      total += r.deleted;
      if (r.scanned < batch || !r.last_at || !r.last_id) break;
      after = { at: r.last_at, id: r.last_id };
    }
    return total;
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

/** One statement of the retention sweep: events deleted and looked at, and the last one looked at. */
interface SweepStep {
  deleted: number;
  scanned: number;
  last_at: string | null;
  last_id: string | null;
}
