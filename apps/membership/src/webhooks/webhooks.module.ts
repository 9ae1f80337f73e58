import { Module } from '@nestjs/common';
import { WebhooksController } from './webhooks.controller';

/** /api/v1/admin/webhooks; the outbox, worker and endpoint use cases are libs/webhooks (WebhooksModule.forRoot in app.module.ts). */
@Module({ controllers: [WebhooksController] })
export class MembershipWebhooksModule {}
