import { MigrationInterface, QueryRunner } from 'typeorm';
import { pauseDisabledWebhookDeliveries, unpauseDisabledWebhookDeliveries } from '@app/webhooks';

/** A disabled endpoint's deliveries leave the due set (`paused`), and the due index is per endpoint (libs/webhooks/src/webhook-migrations.ts). */
export class WebhookDeliveriesPaused1796950000000 implements MigrationInterface {
  name = 'WebhookDeliveriesPaused1796950000000';

  async up(q: QueryRunner): Promise<void> {
    await pauseDisabledWebhookDeliveries(q, '');
  }

  async down(q: QueryRunner): Promise<void> {
    await unpauseDisabledWebhookDeliveries(q, '');
  }
}
