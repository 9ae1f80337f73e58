import { Injectable } from '@nestjs/common';
import { MembershipConfig } from '../config/membership.config';

/**
 * The relying party passkeys are bound to: WEBAUTHN_RP_ID and WEBAUTHN_ORIGINS, by default the host and
 * origin of OAUTH2_CALLBACK_BASE_URL (the service's public address), else localhost in development.
 */
@Injectable()
export class WebauthnSettings {
  constructor(private readonly config: MembershipConfig) {}

  get rpId(): string {
    if (this.config.WEBAUTHN_RP_ID) return this.config.WEBAUTHN_RP_ID;
    return this.config.OAUTH2_CALLBACK_BASE_URL ? new URL(this.config.OAUTH2_CALLBACK_BASE_URL).hostname : 'localhost';
  }

  get origins(): string[] {
    if (this.config.WEBAUTHN_ORIGINS) return this.config.WEBAUTHN_ORIGINS.split(',').map((o) => o.trim());
    if (this.config.OAUTH2_CALLBACK_BASE_URL) return [new URL(this.config.OAUTH2_CALLBACK_BASE_URL).origin];
    return [`http://localhost:${this.config.MEMBERSHIP_PORT}`];
  }
}
