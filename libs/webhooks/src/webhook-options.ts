import type { BaseConfig } from '@app/platform';

/** The errors an app answers for the webhook admin API (membership: envelope codes; gateway: its OpenAI catalog). */
export interface WebhookErrors {
  endpointNotFound(id: string): Error;
  deliveryNotFound(id: string): Error;
  /** A field refused by a rule the DTO cannot check (an address the guard refuses, an unknown event). */
  invalid(field: string, message: string): Error;
  /** WEBHOOK_ENCRYPTION_SECRET is missing in production: no endpoint can be registered. */
  notConfigured(): Error;
}

export interface WebhookOptions {
  /** Prefix of the tables and the enqueue function: '' (membership), 'ai_' (gateway); both apps share one database. */
  tablePrefix: string;
  /** The event names this app emits; endpoints subscribe to some or all of them. */
  events: readonly string[];
  /** The app's development secret the endpoint-secret key is derived from when WEBHOOK_ENCRYPTION_SECRET is unset outside production. */
  developmentSecret(config: BaseConfig): string | undefined;
  errors: WebhookErrors;
}

export const WEBHOOK_OPTIONS = Symbol('WEBHOOK_OPTIONS');

const PREFIX = /^[a-z_]{0,20}$/;

/** The table names of an app, checked once: they are spliced into SQL. */
export function webhookTables(prefix: string) {
  if (!PREFIX.test(prefix)) throw new Error(`webhook table prefix ${prefix} is not a plain identifier prefix`);
  return {
    endpoints: `${prefix}webhook_endpoints`,
    events: `${prefix}webhook_events`,
    deliveries: `${prefix}webhook_deliveries`,
    attempts: `${prefix}webhook_attempts`,
    enqueue: `${prefix}webhook_enqueue`,
  };
}
