import { GatewayError, GatewayErrorCode } from '../errors';
import type { BaseConfig } from '@app/platform';
import type { WebhookOptions } from '@app/webhooks';
import type { GatewayConfig } from '../config/gateway.config';

/** The events the gateway sends (docs/audit-log-and-webhooks.md); names are a contract. */
export const GATEWAY_WEBHOOK_EVENTS = [
  'key.created',
  'key.revoked',
  'key.budget.threshold_reached',
  'key.budget.exhausted',
  'project.budget.threshold_reached',
  'project.budget.exhausted',
  'upstream.cooled_down',
  'upstream.recovered',
] as const;

export const GATEWAY_WEBHOOKS: WebhookOptions = {
  tablePrefix: 'ai_',
  events: GATEWAY_WEBHOOK_EVENTS,
  developmentSecret: (config: BaseConfig) => (config as GatewayConfig).ADMIN_TOKEN,
  errors: {
    endpointNotFound: (id) => new GatewayError(GatewayErrorCode.WebhookEndpointNotFound, { id }),
    deliveryNotFound: (id) => new GatewayError(GatewayErrorCode.WebhookDeliveryNotFound, { id }),
    invalid: (field, message) =>
      new GatewayError(GatewayErrorCode.InvalidValue, { message: `${field}: ${message}`, param: field }),
    notConfigured: () => new GatewayError(GatewayErrorCode.WebhooksNotConfigured),
  },
};
