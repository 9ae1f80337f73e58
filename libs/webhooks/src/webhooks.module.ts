import { DynamicModule, Module } from '@nestjs/common';
import { WEBHOOK_OPTIONS, WebhookOptions } from './webhook-options';
import { WebhookOutbox } from './webhook-outbox';

/** Webhooks of one app: the outbox (global, for any feature's transaction), endpoints, the delivery worker. Controllers stay in the apps. */
@Module({})
export class WebhooksModule {
  static forRoot(options: WebhookOptions): DynamicModule {
    return {
      module: WebhooksModule,
      global: true,
      providers: [{ provide: WEBHOOK_OPTIONS, useValue: options }, WebhookOutbox],
      exports: [WebhookOutbox, WEBHOOK_OPTIONS],
    };
  }
}
