import { Injectable } from '@nestjs/common';
import { BusinessException, ErrorCode, msg } from '@app/envelope';
import { MembershipConfig } from '../../config/membership.config';
import { RedirectAllowlist } from '../redirect-allowlist';
import { OAuth2ClientRegistration, OAuth2Provider, loadOAuth2ClientsFile } from './oauth2-client-registration';

/** The configured third-party clients, loaded once at boot (a bad file stops the boot with every problem listed). */
@Injectable()
export class OAuth2ClientRegistry {
  private readonly registrations: OAuth2ClientRegistration[];
  /** Per client: its own frontend page's origin plus the operator's OAUTH2_REDIRECT_ALLOWLIST. */
  private readonly allowlists = new Map<string, RedirectAllowlist>();

  constructor(config: MembershipConfig) {
    this.registrations = loadOAuth2ClientsFile(config.OAUTH2_CLIENTS_FILE, process.env);
    // Behind a proxy the Host header is not a trustworthy source of the callback address.
    if (config.isProduction && this.registrations.length && !config.OAUTH2_CALLBACK_BASE_URL) {
      throw new Error('OAUTH2_CALLBACK_BASE_URL: required in production when OAUTH2_CLIENTS_FILE configures clients');
    }
    const extra = (config.OAUTH2_REDIRECT_ALLOWLIST ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
    // Never the union of every client's origin: a redirectUri may only point to this client's frontend.
    for (const r of this.registrations)
      this.allowlists.set(r.registrationId, new RedirectAllowlist([...extra, r.redirectUri]));
  }

  /** Where a `redirectUri` of this client may point. */
  allowlistOf(reg: OAuth2ClientRegistration): RedirectAllowlist {
    const list = this.allowlists.get(reg.registrationId);
    if (!list) throw new BusinessException(ErrorCode.NOT_FOUND, msg('oauth.unknownClient'));
    return list;
  }

  all(): OAuth2ClientRegistration[] {
    return [...this.registrations];
  }

  /** The registration by id, or a 404 envelope. */
  get(registrationId: string): OAuth2ClientRegistration {
    const reg = this.registrations.find((r) => r.registrationId === registrationId);
    if (!reg)
      throw new BusinessException(
        ErrorCode.NOT_FOUND,
        msg('oauth.unknownClientId', { id: String(registrationId).slice(0, 64) }),
      );
    return reg;
  }

  /** A registration of the given providers: by id or appid when given, else the first configured. */
  pick(providers: OAuth2Provider[], idOrAppId?: string): OAuth2ClientRegistration {
    const candidates = this.registrations.filter((r) => providers.includes(r.provider));
    const reg = idOrAppId
      ? candidates.find((r) => r.registrationId === idOrAppId || r.clientId === idOrAppId)
      : candidates[0];
    if (!reg)
      throw new BusinessException(
        ErrorCode.NOT_FOUND,
        idOrAppId
          ? msg('oauth.noClientConfiguredFor', {
              providers: providers.join(' or '),
              id: String(idOrAppId).slice(0, 64),
            })
          : msg('oauth.noClientConfigured', { providers: providers.join(' or ') }),
      );
    return reg;
  }
}
