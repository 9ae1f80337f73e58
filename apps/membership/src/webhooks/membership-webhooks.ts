import { BusinessException, ErrorCode, fieldError, msg } from '@app/envelope';
import type { BaseConfig } from '@app/platform';
import type { WebhookOptions } from '@app/webhooks';
import type { MembershipConfig } from '../config/membership.config';

/** The events membership sends (docs/audit-log-and-webhooks.md); names are a contract. */
export const MEMBERSHIP_WEBHOOK_EVENTS = [
  'member.registered',
  'member.login_locked',
  'member.factor_changed',
  'member.disabled',
] as const;

export const MEMBERSHIP_WEBHOOKS: WebhookOptions = {
  tablePrefix: '',
  events: MEMBERSHIP_WEBHOOK_EVENTS,
  developmentSecret: (config: BaseConfig) => (config as MembershipConfig).JWT_SECRET,
  errors: {
    endpointNotFound: () => new BusinessException(ErrorCode.NOT_FOUND, msg('webhooks.endpointNotFound')),
    deliveryNotFound: () => new BusinessException(ErrorCode.NOT_FOUND, msg('webhooks.deliveryNotFound')),
    invalid: (field, message) => fieldError(field, 'webhook', message),
    notConfigured: () => new BusinessException(ErrorCode.SERVICE_UNAVAILABLE, msg('webhooks.notConfigured')),
  },
};
