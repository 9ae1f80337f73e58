import { Injectable, Logger } from '@nestjs/common';
import { WechatApiClient, WechatApiError, WechatAuthorizeScope } from '@app/wechat';
import { ExternalProfile } from '../../identities/external-profile';
import { OAuth2ClientRegistration } from '../clients/oauth2-client-registration';
import { AuthorizationState } from '../oauth2-state.repository';
import { AuthorizationRequest, ProviderAuthorizationFailed, ProviderFlow } from './provider-flow';

export function wechatScopeOf(stored: Pick<AuthorizationState, 'kind'>): WechatAuthorizeScope {
  return stored.kind === 'wechat-qrconnect'
    ? 'snsapi_login'
    : stored.kind === 'wechat-silent'
      ? 'snsapi_base'
      : 'snsapi_userinfo';
}

/** WeChat's own OAuth: website QR (snsapi_login) and in-WeChat authorization (snsapi_userinfo / snsapi_base). */
@Injectable()
export class WechatOAuthFlow implements ProviderFlow {
  private readonly log = new Logger('WeChat');

  constructor(private readonly wechat: WechatApiClient) {}

  async authorizationUrl(reg: OAuth2ClientRegistration, r: AuthorizationRequest): Promise<string> {
    const scope =
      (r.scope as WechatAuthorizeScope | undefined) ??
      (reg.provider === 'wechat-open' ? 'snsapi_login' : 'snsapi_userinfo');
    return this.wechat.authorizeUrl({ appId: reg.clientId, redirectUri: r.callbackUrl, scope, state: r.state });
  }

  async complete(
    reg: OAuth2ClientRegistration,
    query: Record<string, string>,
    stored: AuthorizationState,
  ): Promise<ExternalProfile> {
    // WeChat redirects without a code when the user refuses.
    if (!query.code) throw new ProviderAuthorizationFailed('access_denied', 'the user did not authorize');
    return this.profileFromCode(reg, query.code, wechatScopeOf(stored));
  }

  /** Exchanges a WeChat code; user info is read unless the scope is snsapi_base (openid only). */
  async profileFromCode(
    reg: OAuth2ClientRegistration,
    code: string,
    scope: WechatAuthorizeScope,
  ): Promise<ExternalProfile> {
    try {
      const token = await this.wechat.exchangeCode(reg.clientId, reg.clientSecret, code);
      const profile: ExternalProfile = {
        provider: `wechat:${reg.clientId}`,
        subject: token.openid,
        registrationId: reg.registrationId,
        unionId: token.unionid ?? null,
      };
      if (scope !== 'snsapi_base') {
        const info = await this.wechat.snsUserInfo(token.access_token, token.openid);
        profile.unionId = info.unionid ?? profile.unionId;
        profile.nickname = info.nickname || null;
        profile.avatarUrl = info.headimgurl || null;
      }
      return profile;
    } catch (e) {
      if (!(e instanceof WechatApiError)) throw e;
      this.log.warn(`${reg.registrationId}: ${e.api} errcode ${e.errcode}`);
      if (e.errcode === 40029 || e.errcode === 40163 || e.errcode === 41008) {
        throw new ProviderAuthorizationFailed('invalid_grant', `WeChat refused the code (errcode ${e.errcode})`);
      }
      throw new ProviderAuthorizationFailed('server_error', `WeChat API failed (errcode ${e.errcode})`);
    }
  }
}
