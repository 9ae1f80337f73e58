import { Inject, Injectable } from '@nestjs/common';
import { createHash, createHmac, randomBytes } from 'crypto';
import { BaseConfig, SecretBox } from '@app/platform';
import { WEBHOOK_OPTIONS, WebhookOptions } from './webhook-options';

/**
 * Endpoint secrets (`whsec_<base64>`, the Standard Webhooks form) must be read back to sign every
 * delivery, so they are sealed with SecretBox (libs/platform/src/crypto/secret-box.ts) under a key from
 * WEBHOOK_ENCRYPTION_SECRET; outside production a development key is derived from the app's own
 * development secret (membership JWT_SECRET, gateway ADMIN_TOKEN). The endpoint id is the associated data.
 */
@Injectable()
export class WebhookSecrets {
  private readonly box: SecretBox | null;

  constructor(config: BaseConfig, @Inject(WEBHOOK_OPTIONS) options: WebhookOptions) {
    const key = config.WEBHOOK_ENCRYPTION_SECRET
      ? createHash('sha256').update(`webhooks:endpoint-secret-key:v1:${config.WEBHOOK_ENCRYPTION_SECRET}`).digest()
      : developmentKey(config, options);
    this.box = key ? new SecretBox(key) : null;
  }

  get configured(): boolean {
    return this.box !== null;
  }

  /** A new secret: 24 random bytes, as `whsec_<base64>`. */
  generate(): string {
    return `whsec_${randomBytes(24).toString('base64')}`;
  }

  seal(secret: string, endpointId: string): string {
    if (!this.box) throw new Error('webhook secrets are not configured');
    return this.box.seal(secret, endpointId);
  }

  open(sealed: string, endpointId: string): string | null {
    return this.box?.open(sealed, endpointId) ?? null;
  }
}

function developmentKey(config: BaseConfig, options: WebhookOptions): Buffer | null {
  const root = options.developmentSecret(config);
  if (config.isProduction || !root) return null;
  return createHmac('sha256', root).update('webhooks:development-key:v1').digest();
}
