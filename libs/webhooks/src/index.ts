export * from './webhook-options';
export * from './webhook-migrations';
export * from './webhook-outbox';
export * from './webhooks.module';
