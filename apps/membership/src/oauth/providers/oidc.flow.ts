import { Injectable, Logger } from '@nestjs/common';
import { BaseClient, Issuer, errors } from 'openid-client';
import { ExternalProfile } from '../../identities/external-profile';
import { OAuth2ClientRegistration } from '../clients/oauth2-client-registration';
import { AuthorizationState } from '../oauth2-state.repository';
import { AuthorizationRequest, ProviderAuthorizationFailed, ProviderFlow } from './provider-flow';

/** OpenID Connect providers through openid-client: discovery, PKCE, nonce, ID token validation. */
@Injectable()
export class OidcFlow implements ProviderFlow {
  private readonly log = new Logger('OIDC');
  private readonly clients = new Map<string, Promise<BaseClient>>();

  /** Discovery is cached per registration; a failed discovery is retried on the next request. */
  private client(reg: OAuth2ClientRegistration): Promise<BaseClient> {
    let c = this.clients.get(reg.registrationId);
    if (!c) {
      c = Issuer.discover(reg.issuer!).then(
        (issuer) =>
          new issuer.Client({
            client_id: reg.clientId,
            client_secret: reg.clientSecret,
            response_types: ['code'],
          }),
      );
      c.catch(() => this.clients.delete(reg.registrationId));
      this.clients.set(reg.registrationId, c);
    }
    return c;
  }

  async authorizationUrl(reg: OAuth2ClientRegistration, r: AuthorizationRequest): Promise<string> {
    let client: BaseClient;
    try {
      client = await this.client(reg);
    } catch (e) {
      this.log.warn(`${reg.registrationId}: discovery of ${reg.issuer} failed: ${(e as Error).message}`);
      throw new ProviderAuthorizationFailed('temporarily_unavailable', 'the identity provider cannot be reached');
    }
    return client.authorizationUrl({
      scope: reg.scopes.join(' '),
      redirect_uri: r.callbackUrl,
      state: r.state,
      nonce: r.nonce,
      ...(r.codeChallenge ? { code_challenge: r.codeChallenge, code_challenge_method: 'S256' } : {}),
    });
  }

  async complete(
    reg: OAuth2ClientRegistration,
    query: Record<string, string>,
    stored: AuthorizationState,
  ): Promise<ExternalProfile> {
    const client = await this.client(reg).catch(() => {
      throw new ProviderAuthorizationFailed('temporarily_unavailable', 'the identity provider cannot be reached');
    });
    let claims: Record<string, unknown>;
    try {
      const params = client.callbackParams(`/?${new URLSearchParams(query).toString()}`);
      const tokens = await client.callback(stored.callbackUrl, params, {
        state: query.state,
        nonce: stored.nonce,
        code_verifier: stored.codeVerifier,
        response_type: 'code',
      });
      claims = { ...tokens.claims() };
      if (client.issuer.metadata.userinfo_endpoint && tokens.access_token) {
        const info = await client.userinfo(tokens);
        if (info.sub !== claims.sub)
          throw new ProviderAuthorizationFailed('invalid_token', 'userinfo subject differs from the ID token');
        claims = { ...info, ...claims };
      }
    } catch (e) {
      if (e instanceof ProviderAuthorizationFailed) throw e;
      if (e instanceof errors.OPError)
        throw new ProviderAuthorizationFailed(e.error ?? 'server_error', e.error_description ?? e.error ?? e.message);
      if (e instanceof errors.RPError) throw new ProviderAuthorizationFailed('invalid_response', e.message);
      this.log.warn(`${reg.registrationId}: callback failed: ${(e as Error).name}`);
      throw new ProviderAuthorizationFailed('server_error', 'the identity provider answer could not be used');
    }
    const subject = claims[reg.userNameAttribute] ?? claims.sub;
    if (typeof subject !== 'string' || !subject) throw new ProviderAuthorizationFailed('invalid_token', 'no subject');
    return {
      provider: `oidc:${client.issuer.metadata.issuer}`,
      subject,
      registrationId: reg.registrationId,
      nickname: str(claims.name) ?? str(claims.preferred_username) ?? str(claims.nickname),
      avatarUrl: str(claims.picture),
    };
  }
}

function str(v: unknown): string | null {
  return typeof v === 'string' && v ? v : null;
}
