import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { randomUUID } from 'crypto';
import { DataSource } from 'typeorm';
import { AuditContext, AuditLog } from '@app/audit';
import { returnedRows } from '@app/database';
import { WEBHOOK_OPTIONS, WebhookOptions, webhookTables } from './webhook-options';

export interface EndpointRow {
  id: string;
  url: string;
  description: string;
  events: string[] | null;
  secret_sealed: string;
  enabled: boolean;
  disabled_reason: string | null;
  created_at: Date;
  updated_at: Date;
}

export interface DeliveryRow {
  id: string;
  event_id: string;
  endpoint_id: string;
  event_type: string;
  payload: unknown;
  status: string;
  attempts: number;
  next_attempt_at: Date;
  last_status: number | null;
  last_error: string | null;
  last_attempt_at: Date | null;
  delivered_at: Date | null;
  created_at: Date;
}

export interface EndpointChanges {
  url?: string;
  description?: string;
  events?: string[] | null;
  enabled?: boolean;
}

/** What an audit row shows of an endpoint: never its secret. */
export function endpointAudit(e: EndpointRow | null): Record<string, unknown> | null {
  return e ? { url: e.url, description: e.description, events: e.events, enabled: e.enabled } : null;
}

/** Every query of the webhook admin API; each change writes its audit row in the same transaction. */
@Injectable()
export class WebhookEndpointsRepository {
  private readonly t: ReturnType<typeof webhookTables>;

  constructor(
    @InjectDataSource() private readonly db: DataSource,
    @Inject(WEBHOOK_OPTIONS) options: WebhookOptions,
    private readonly audit: AuditLog,
  ) {
    this.t = webhookTables(options.tablePrefix);
  }

  /** Inserts an endpoint whose secret is sealed for its id (known before the insert). */
  insert(
    fields: { url: string; description: string; events: string[] | null },
    sealFor: (id: string) => string,
    ctx: AuditContext,
  ): Promise<EndpointRow> {
    const id = randomUUID();
    return this.db.transaction(async (m) => {
      const [row] = await m.query<EndpointRow[]>(
        `INSERT INTO ${this.t.endpoints} (id, url, description, events, secret_sealed) VALUES ($1, $2, $3, $4, $5) RETURNING *`,
        [id, fields.url, fields.description, fields.events, sealFor(id)],
      );
      await this.audit.record(m, {
        ...ctx,
        action: 'webhook_endpoint.created',
        target: { type: 'webhook_endpoint', id },
        after: endpointAudit(row),
      });
      return row;
    });
  }

  list(): Promise<EndpointRow[]> {
    return this.db.query<EndpointRow[]>(`SELECT * FROM ${this.t.endpoints} ORDER BY created_at DESC, id`);
  }

  async find(id: string): Promise<EndpointRow | null> {
    const [row] = await this.db.query<EndpointRow[]>(`SELECT * FROM ${this.t.endpoints} WHERE id = $1`, [id]);
    return row ?? null;
  }

  /**
   * Applies changes. Disabling an endpoint pauses its pending deliveries (they leave the due set); enabling it
   * again makes them pending (both by the trigger on its flag) with a retry window restarted from `now` (they
   * would otherwise fail at once).
   * Null when it does not exist.
   */
  update(
    id: string,
    changes: EndpointChanges,
    ctx: AuditContext,
    now: Date,
    retryMs: number,
  ): Promise<EndpointRow | null> {
    return this.db.transaction(async (m) => {
      const [before] = await m.query<EndpointRow[]>(`SELECT * FROM ${this.t.endpoints} WHERE id = $1 FOR UPDATE`, [id]);
      if (!before) return null;
      const [row] = returnedRows<EndpointRow>(
        await m.query(
          `UPDATE ${this.t.endpoints} SET url = $2, description = $3, events = $4, enabled = $5,
                disabled_reason = CASE WHEN $5 THEN NULL ELSE disabled_reason END, updated_at = now()
          WHERE id = $1 RETURNING *`,
          [
            id,
            changes.url ?? before.url,
            changes.description ?? before.description,
            changes.events !== undefined ? changes.events : before.events,
            changes.enabled ?? before.enabled,
          ],
        ),
      );
      // The flag's trigger has paused or resumed the deliveries (webhook-migrations.ts createWebhookPauseTrigger).
      if (row.enabled && !before.enabled) {
        await m.query(
          `UPDATE ${this.t.deliveries} SET give_up_at = $2, next_attempt_at = LEAST(next_attempt_at, $3)
            WHERE endpoint_id = $1 AND status = 'pending'`,
          [id, new Date(now.getTime() + retryMs), now],
        );
      }
      await this.audit.record(m, {
        ...ctx,
        action: 'webhook_endpoint.updated',
        target: { type: 'webhook_endpoint', id },
        before: endpointAudit(before),
        after: endpointAudit(row),
      });
      return row;
    });
  }

  delete(id: string, ctx: AuditContext): Promise<boolean> {
    return this.db.transaction(async (m) => {
      const [before] = returnedRows<EndpointRow>(
        await m.query(`DELETE FROM ${this.t.endpoints} WHERE id = $1 RETURNING *`, [id]),
      );
      if (!before) return false;
      await this.audit.record(m, {
        ...ctx,
        action: 'webhook_endpoint.deleted',
        target: { type: 'webhook_endpoint', id },
        before: endpointAudit(before),
      });
      return true;
    });
  }

  /** The endpoint's deliveries, newest first, older than `beforeId` when given. */
  deliveries(endpointId: string, beforeId: string | null, limit: number): Promise<DeliveryRow[]> {
    return this.db.query<DeliveryRow[]>(
      `SELECT d.*, e.type AS event_type, e.payload FROM ${this.t.deliveries} d JOIN ${this.t.events} e ON e.id = d.event_id
        WHERE d.endpoint_id = $1 AND ($2::bigint IS NULL OR d.id < $2::bigint) ORDER BY d.id DESC LIMIT $3`,
      [endpointId, beforeId, limit],
    );
  }

  /**
   * Puts a delivery back in the queue (due now, a fresh retry window): the same event, the same
   * webhook-id, so a receiver that already has it can drop it; paused while the endpoint is disabled.
   * Null when the endpoint has no such delivery, also when the retention sweep is deleting it: the update waits for
   * the sweep's lock and finds no row (webhook-deliveries.repository.ts sweep keeps an event this made pending).
   */
  redeliver(
    endpointId: string,
    deliveryId: string,
    ctx: AuditContext,
    now: Date,
    retryMs: number,
  ): Promise<DeliveryRow | null> {
    return this.db.transaction(async (m) => {
      const [row] = returnedRows<{ id: string; event_id: string }>(
        await m.query(
          `UPDATE ${this.t.deliveries} d SET status = CASE WHEN e.enabled THEN 'pending' ELSE 'paused' END,
                next_attempt_at = $3, give_up_at = $4, lease_until = NULL, lease_token = NULL
            FROM ${this.t.endpoints} e
          WHERE d.id = $2::bigint AND d.endpoint_id = $1 AND e.id = d.endpoint_id RETURNING d.id, d.event_id`,
          [endpointId, deliveryId, now, new Date(now.getTime() + retryMs)],
        ),
      );
      if (!row) return null;
      await this.audit.record(m, {
        ...ctx,
        action: 'webhook_delivery.redelivered',
        target: { type: 'webhook_endpoint', id: endpointId },
        after: { delivery_id: String(row.id), event_id: row.event_id },
      });
      const [view] = await m.query<DeliveryRow[]>(
        `SELECT d.*, e.type AS event_type, e.payload FROM ${this.t.deliveries} d JOIN ${this.t.events} e ON e.id = d.event_id WHERE d.id = $1`,
        [row.id],
      );
      return view;
    });
  }
}
