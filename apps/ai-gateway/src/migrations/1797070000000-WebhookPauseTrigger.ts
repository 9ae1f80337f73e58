import { MigrationInterface, QueryRunner } from 'typeorm';
import { createWebhookPauseTrigger, dropWebhookPauseTrigger } from '@app/webhooks';

/** An endpoint's flag pauses and resumes its deliveries whoever writes it (libs/webhooks/src/webhook-migrations.ts). */
export class WebhookPauseTrigger1797070000000 implements MigrationInterface {
  name = 'WebhookPauseTrigger1797070000000';

  async up(q: QueryRunner): Promise<void> {
    await createWebhookPauseTrigger(q, 'ai_');
  }

  async down(q: QueryRunner): Promise<void> {
    await dropWebhookPauseTrigger(q, 'ai_');
  }
}
