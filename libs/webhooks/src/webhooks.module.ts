import { DynamicModule, Module } from '@nestjs/common';
import { WebhookDeliveriesRepository } from './webhook-deliveries.repository';
import { WebhookDeliveryWorker } from './webhook-delivery.worker';
import { WebhookEndpointsRepository } from './webhook-endpoints.repository';
import { WebhookEndpointsService } from './webhook-endpoints.service';
import { WEBHOOK_OPTIONS, WebhookOptions } from './webhook-options';
import { WebhookOutbox } from './webhook-outbox';
import { WebhookSecrets } from './webhook-secrets';

/** Webhooks of one app: the outbox (global, for any feature's transaction), endpoints, the delivery worker. Controllers stay in the apps. */
@Module({})
export class WebhooksModule {
  static forRoot(options: WebhookOptions): DynamicModule {
    return {
      module: WebhooksModule,
      global: true,
      providers: [
        { provide: WEBHOOK_OPTIONS, useValue: options },
        WebhookOutbox,
        WebhookSecrets,
        WebhookEndpointsRepository,
        WebhookEndpointsService,
        WebhookDeliveriesRepository,
        WebhookDeliveryWorker,
      ],
      exports: [WebhookOutbox, WEBHOOK_OPTIONS, WebhookEndpointsService, WebhookDeliveryWorker],
    };
  }
}
