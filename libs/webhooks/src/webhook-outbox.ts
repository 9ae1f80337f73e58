import { Inject, Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { Clock } from '@app/platform';
import { WEBHOOK_OPTIONS, WebhookOptions, webhookTables } from './webhook-options';

/**
 * Enqueues a webhook event in the caller's transaction (the durable outbox): the event and its
 * deliveries exist exactly when the change does, and the delivery worker (webhook-delivery.worker.ts)
 * sends them at least once. Events nobody subscribes to are not stored.
 */
@Injectable()
export class WebhookOutbox {
  private readonly enqueueFn: string;

  constructor(
    @Inject(WEBHOOK_OPTIONS) private readonly options: WebhookOptions,
    private readonly clock: Clock,
  ) {
    this.enqueueFn = webhookTables(options.tablePrefix).enqueue;
  }

  /** The event's webhook-id (`msg_...`), or null when no enabled endpoint subscribes to `type`. */
  async enqueue(
    manager: Pick<EntityManager, 'query'>,
    type: string,
    data: Record<string, unknown>,
  ): Promise<string | null> {
    if (!this.options.events.includes(type)) throw new Error(`unknown webhook event type ${type}`);
    const [row] = await manager.query<Array<{ id: string | null }>>(
      `SELECT ${this.enqueueFn}($1, $2::jsonb, $3) AS id`,
      [type, JSON.stringify(data), new Date(this.clock.now())],
    );
    return row?.id ?? null;
  }
}
