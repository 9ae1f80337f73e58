import { Injectable, Logger } from '@nestjs/common';
import { BusinessException, ErrorCode, msg } from '@app/envelope';
import { WechatAuthorizeScope } from '@app/wechat';
import { LoginService } from '../auth/login.service';
import { MemberLoginResponse } from '../auth/dtos/member-login.dto';
import { MfaChallengeResponse } from '../auth/dtos/mfa.dto';
import { MembershipConfig } from '../config/membership.config';
import { ExternalProfile } from '../identities/external-profile';
import { MemberIdentitiesService } from '../identities/member-identities.service';
import { MembersService } from '../members/members.service';
import { ClientFacts } from '../sessions/client-facts';
import { SessionsService } from '../sessions/sessions.service';
import { OAuth2ClientRegistration } from './clients/oauth2-client-registration';
import { OAuth2ClientRegistry } from './clients/oauth2-client.registry';
import { OAuth2AuthUrlResponse, OAuth2LoginResponse, OAuth2QRCodeStateResponse } from './dtos/oauth2-responses.dto';
import {
  AuthorizationState,
  OAuth2FlowKind,
  OAuth2StateRepository,
  PendingLogin,
  QrcodeState,
  STATE_TTL_MS,
  isWellFormedState,
  randomState,
} from './oauth2-state.repository';
import { OidcFlow } from './providers/oidc.flow';
import { PassportOAuth2Flow } from './providers/passport-oauth2.flow';
import { WechatOAuthFlow } from './providers/wechat-oauth.flow';
import { ProviderAuthorizationFailed, ProviderFlow, pkcePair } from './providers/provider-flow';
import { bindingExpected, bindingMatches, issueBinding } from './browser-binding';

/** An authorization started: the answer, and the binding cookie (oauth/browser-binding.ts) the controller sets on it. */
export interface OAuth2Started {
  authorization: OAuth2AuthUrlResponse;
  setCookie: string;
}

/** Where `begin` sends the browser, and the binding cookie to set when this browser was just bound. */
export interface OAuth2Begun {
  location: string;
  setCookie?: string;
}

export interface StartOptions {
  kind: OAuth2FlowKind;
  redirectUri?: string;
  linkMemberId?: string;
  /** The linking member's session (access token `sid`); the link is refused once it has ended. */
  linkSessionId?: string;
  /**
   * Login only: answer `{base_url}/login/oauth2/authorize/{id}?state=` instead of the provider URL. The
   * browser opening it gets the binding cookie on the API's own origin (a cross-origin fetch of the
   * auth URL without credentials cannot store one) and is sent on to the provider.
   */
  viaBegin?: boolean;
}

const AUTH_TYPE: Record<OAuth2FlowKind, string> = {
  standard: 'oauth2',
  'wechat-qrconnect': 'qrcode',
  'wechat-mobile': 'mobile',
  'wechat-silent': 'silent',
  'wechat-mp-scan': 'qrcode',
};

const STATE_REFUSED = msg('oauth.stateRefused');
const OTHER_BROWSER = msg('oauth.otherBrowser');

/** Starts third-party authorizations, finishes their callbacks and exchanges the results once. */
/** The callback's answer: the login result, or (a member with a second factor) the challenge, with the third-party facts either way. */
export type OAuth2LoginResult =
  OAuth2LoginResponse | (MfaChallengeResponse & Omit<OAuth2LoginResponse, keyof MemberLoginResponse>);

@Injectable()
export class OAuth2LoginService {
  private readonly log = new Logger('OAuth2Login');

  constructor(
    private readonly registry: OAuth2ClientRegistry,
    private readonly store: OAuth2StateRepository,
    private readonly passportFlow: PassportOAuth2Flow,
    private readonly oidcFlow: OidcFlow,
    private readonly wechatFlow: WechatOAuthFlow,
    private readonly identities: MemberIdentitiesService,
    private readonly members: MembersService,
    private readonly logins: LoginService,
    private readonly config: MembershipConfig,
    private readonly sessions: SessionsService,
  ) {}

  private flowOf(reg: OAuth2ClientRegistration): ProviderFlow {
    if (reg.provider === 'oidc') return this.oidcFlow;
    if (reg.provider === 'wechat-open' || reg.provider === 'wechat-mp') return this.wechatFlow;
    return this.passportFlow;
  }

  /** `{base_url}/login/oauth2/code/{registrationId}`: configured, or derived from the request. */
  callbackUrl(reg: OAuth2ClientRegistration, client: Pick<ClientFacts, 'origin'>): string {
    return `${this.baseUrl(client)}/login/oauth2/code/${encodeURIComponent(reg.registrationId)}`;
  }

  private baseUrl(client: Pick<ClientFacts, 'origin'>): string {
    return this.config.OAUTH2_CALLBACK_BASE_URL
      ? this.config.OAUTH2_CALLBACK_BASE_URL.replace(/\/+$/, '')
      : `${client.origin}${normalize(this.config.CONTEXT_PATH)}`;
  }

  /** The frontend page to return to: the client's own page, or one allowlisted for this client. */
  frontendUrl(reg: OAuth2ClientRegistration, redirectUri?: string): string {
    if (redirectUri === undefined || redirectUri === '') return reg.redirectUri;
    const resolved = this.registry.allowlistOf(reg).resolve(redirectUri, reg.redirectUri);
    if (!resolved) {
      throw new BusinessException(ErrorCode.VALIDATION_FAILED, msg('oauth.redirectNotAllowed'), {
        details: { fields: ['redirectUri'] },
      });
    }
    return resolved;
  }

  async start(reg: OAuth2ClientRegistration, client: ClientFacts, opts: StartOptions): Promise<OAuth2Started> {
    const state = randomState();
    const frontendUrl = this.frontendUrl(reg, opts.redirectUri);
    // Silent authorization returns the code straight to the frontend page, which calls /wechat/silent/openid.
    const callbackUrl = opts.kind === 'wechat-silent' ? frontendUrl : this.callbackUrl(reg, client);
    const isWechat = reg.provider === 'wechat-open' || reg.provider === 'wechat-mp';
    const pkce = !isWechat && reg.pkce ? pkcePair() : undefined;
    const nonce = reg.provider === 'oidc' ? randomState() : undefined;
    const scope: string = isWechat ? wechatScope(opts.kind) : reg.scopes.join(' ');
    let authorizationUrl: string;
    try {
      authorizationUrl = await this.flowOf(reg).authorizationUrl(reg, {
        state,
        callbackUrl,
        codeChallenge: pkce?.challenge,
        nonce,
        scope: isWechat ? scope : undefined,
      });
    } catch (e) {
      if (e instanceof ProviderAuthorizationFailed)
        throw new BusinessException(ErrorCode.SERVICE_UNAVAILABLE, e.description);
      throw e;
    }
    const viaBegin = !!opts.viaBegin && !opts.linkMemberId && opts.kind !== 'wechat-silent';
    const binding = issueBinding(client);
    const record: AuthorizationState = {
      registrationId: reg.registrationId,
      kind: opts.kind,
      callbackUrl,
      frontendUrl,
      codeVerifier: pkce?.verifier,
      nonce,
      linkMemberId: opts.linkMemberId,
      linkSessionId: opts.linkMemberId ? opts.linkSessionId : undefined,
      // A link state is bound here, by the answer to the member's authenticated request, and nowhere else.
      browserHash: binding.hash,
      authorizationUrl: viaBegin ? authorizationUrl : undefined,
    };
    await this.store.saveAuthorization(state, record);
    if (viaBegin)
      authorizationUrl = `${this.baseUrl(client)}/login/oauth2/authorize/${encodeURIComponent(reg.registrationId)}?state=${state}`;
    if (opts.kind === 'wechat-qrconnect') {
      await this.store.createQrcode(state, {
        registrationId: reg.registrationId,
        kind: opts.kind,
        expiresAt: Date.now() + STATE_TTL_MS,
        appId: reg.clientId,
      });
    }
    const authorization: OAuth2AuthUrlResponse = {
      authorizationUrl,
      state,
      appId: reg.clientId,
      redirectUri: callbackUrl,
      scope,
      authType: reg.provider === 'oidc' ? 'oidc' : AUTH_TYPE[opts.kind],
    };
    return { authorization, setCookie: binding.setCookie };
  }

  /**
   * `/login/oauth2/authorize/{registrationId}?state=`: a login's way to the provider through the API's
   * own origin, so that the browser holds the binding cookie when the provider sends it back. The first
   * browser to open it is bound (unless the starting browser already was): whoever opens it then signs
   * in at the provider with their own account, so a forwarded link can only log its opener into their
   * own account. Link states never come here. Returns the provider URL (and the cookie of a new binding).
   */
  async begin(registrationId: string, state: unknown, client: ClientFacts): Promise<OAuth2Begun> {
    const reg = this.registry.get(registrationId);
    if (!isWellFormedState(state)) throw new BusinessException(ErrorCode.BAD_REQUEST, msg('oauth.stateMalformed'));
    const stored = await this.store.getAuthorization(state);
    if (!stored || !stored.authorizationUrl || stored.linkMemberId)
      throw new BusinessException(ErrorCode.BAD_REQUEST, STATE_REFUSED);
    if (stored.registrationId !== reg.registrationId)
      throw new BusinessException(ErrorCode.BAD_REQUEST, msg('oauth.stateOtherClient'));
    const first = await this.store.claim(`begin:${state}`, STATE_TTL_MS);
    if (bindingMatches(client, stored.browserHash)) return { location: stored.authorizationUrl };
    if (!first) throw new BusinessException(ErrorCode.FORBIDDEN, OTHER_BROWSER);
    const binding = issueBinding(client);
    stored.browserHash = binding.hash;
    if (!(await this.store.updateAuthorization(state, stored)))
      throw new BusinessException(ErrorCode.BAD_REQUEST, STATE_REFUSED);
    return { location: stored.authorizationUrl, setCookie: binding.setCookie };
  }

  /**
   * The provider's return to `/login/oauth2/code/{registrationId}`. Returns where to send the browser.
   * An unusable state is refused outright (400), one started in another browser with 403 (the binding
   * cookie, see browser-binding.ts); a provider failure goes back to the frontend with `?error=`.
   */
  async finishCallback(registrationId: string, query: Record<string, string>, client: ClientFacts): Promise<string> {
    const reg = this.registry.get(registrationId);
    if (!isWellFormedState(query.state))
      throw new BusinessException(ErrorCode.BAD_REQUEST, msg('oauth.stateMalformed'));
    const stored = await this.store.takeAuthorization(query.state);
    if (!stored) throw new BusinessException(ErrorCode.BAD_REQUEST, STATE_REFUSED);
    if (stored.registrationId !== reg.registrationId) {
      this.log.warn(`state issued for ${stored.registrationId} came back through ${reg.registrationId}; refused`);
      throw new BusinessException(ErrorCode.BAD_REQUEST, msg('oauth.stateOtherClient'));
    }
    if (stored.kind === 'wechat-silent')
      throw new BusinessException(ErrorCode.BAD_REQUEST, msg('oauth.silentReturnsToFrontend'));
    // Login CSRF and link CSRF: a callback URL (code + state) carried to another browser is refused.
    if (!bindingMatches(client, stored.browserHash)) {
      this.log.warn(
        `${reg.registrationId}: callback from a browser that did not start the ${stored.linkMemberId ? 'link' : 'login'}; refused`,
      );
      throw new BusinessException(ErrorCode.FORBIDDEN, OTHER_BROWSER);
    }
    const isWechat = reg.provider === 'wechat-open' || reg.provider === 'wechat-mp';
    if (!isWechat && reg.pkce && !stored.codeVerifier)
      throw new BusinessException(ErrorCode.BAD_REQUEST, msg('oauth.noPkceVerifier'));
    // Polled website QR (started at /wechat/qrcode): the result waits under the QR state itself.
    const qr = stored.kind === 'wechat-qrconnect' && !stored.authorizationUrl;
    try {
      // A link acts for the session that asked for it: once that session ended (logout, password change or
      // reset by the address owner, who takes over an unproven claimant's account) the state links nothing.
      if (stored.linkMemberId && !(await this.linkSessionLive(stored.linkMemberId, stored.linkSessionId))) {
        throw new BusinessException(ErrorCode.UNAUTHORIZED, msg('auth.sessionEnded'));
      }
      const profile = await this.flowOf(reg).complete(reg, query, stored);
      if (stored.linkMemberId) {
        await this.identities.link(stored.linkMemberId, profile);
        if (qr) await this.store.setQrcodeStatus(query.state, QrcodeState.AUTHORIZED);
        return withParams(stored.frontendUrl, { linked: reg.registrationId });
      }
      const resultState = qr ? query.state : randomState();
      const pending = await this.pendingLogin(reg, profile);
      await this.store.savePendingLogin(resultState, {
        ...pending,
        browserHash: stored.browserHash,
        strictBinding: qr,
      });
      if (stored.kind === 'wechat-qrconnect') await this.store.setQrcodeStatus(query.state, QrcodeState.AUTHORIZED);
      return withParams(stored.frontendUrl, { state: resultState });
    } catch (e) {
      if (qr) await this.store.setQrcodeStatus(query.state, QrcodeState.CANCELED);
      if (e instanceof ProviderAuthorizationFailed) {
        this.log.warn(`${reg.registrationId}: authorization failed: ${e.error}`);
        return withParams(stored.frontendUrl, { error: e.error, error_description: e.description.slice(0, 200) });
      }
      if (e instanceof BusinessException) {
        const code =
          e.code === ErrorCode.ALREADY_TAKEN
            ? 'already_linked'
            : e.code === ErrorCode.ACCOUNT_LOCKED
              ? 'account_locked'
              : 'login_failed';
        return withParams(stored.frontendUrl, { error: code, error_description: e.message.slice(0, 200) });
      }
      throw e;
    }
  }

  private async linkSessionLive(memberId: string, sessionId: string | undefined): Promise<boolean> {
    if (!sessionId) return false;
    const live = await this.sessions.liveness(sessionId, memberId);
    return !!live && !live.revoked && !live.expired && live.memberStatus === 'active';
  }

  /** Links or creates the member behind an identity and describes the login waiting for exchange. */
  async pendingLogin(reg: OAuth2ClientRegistration, profile: ExternalProfile): Promise<PendingLogin> {
    const resolved = await this.identities.resolveForLogin(profile);
    if (resolved.member.status !== 'active')
      throw new BusinessException(ErrorCode.ACCOUNT_LOCKED, msg('oauth.accountDisabled'));
    return {
      memberId: resolved.member.id,
      registrationId: reg.registrationId,
      provider: reg.provider,
      loginType: reg.provider === 'wechat-open' ? 'wechat' : reg.provider,
      openId: profile.subject,
      unionId: profile.unionId ?? null,
      nickname: profile.nickname ?? null,
      avatarUrl: profile.avatarUrl ?? null,
      isNewUser: resolved.isNewUser,
      isBound: resolved.isBound,
    };
  }

  /**
   * GET /callback?state=: the login result, once, to the browser it is bound to. QR logins (polled by
   * state) always need the binding cookie of the page that created the QR code, so a stranger who saw the
   * state cannot take the login. Redirect results are checked whenever the request can show the cookie
   * (it sends one, or it is a same-origin fetch); a cross-origin page that fetches without credentials
   * cannot, and is served on the state alone (docs/membership/oauth.md: send credentials to close that).
   */
  async exchange(state: string, client: ClientFacts): Promise<OAuth2LoginResult> {
    const peeked = await this.store.peekPendingLogin(state);
    if (peeked && (peeked.strictBinding || bindingExpected(client)) && !bindingMatches(client, peeked.browserHash)) {
      throw new BusinessException(ErrorCode.FORBIDDEN, OTHER_BROWSER);
    }
    const pending = await this.store.takePendingLogin(state);
    if (!pending) throw new BusinessException(ErrorCode.CODE_INVALID, STATE_REFUSED);
    const member = await this.members.findById(pending.memberId);
    if (!member) throw new BusinessException(ErrorCode.CODE_INVALID, STATE_REFUSED);
    if (member.status !== 'active') throw new BusinessException(ErrorCode.ACCOUNT_LOCKED, msg('oauth.accountDisabled'));
    const login = await this.logins.issueLogin(member, pending.loginType, client);
    return {
      ...login,
      openId: pending.openId,
      unionId: pending.unionId,
      thirdPartyNickname: pending.nickname,
      thirdPartyAvatarUrl: pending.avatarUrl,
      isNewUser: pending.isNewUser,
      isBound: pending.isBound,
    };
  }

  async qrcodeState(state: string): Promise<OAuth2QRCodeStateResponse> {
    const record = await this.store.getQrcode(state);
    if (!record) throw new BusinessException(ErrorCode.NOT_FOUND, msg('oauth.unknownQrState'));
    return { state, qrcodeState: record.status };
  }
}

function wechatScope(kind: OAuth2FlowKind): WechatAuthorizeScope {
  return kind === 'wechat-qrconnect' ? 'snsapi_login' : kind === 'wechat-silent' ? 'snsapi_base' : 'snsapi_userinfo';
}

function normalize(prefix: string): string {
  const t = (prefix ?? '').trim().replace(/^\/+|\/+$/g, '');
  return t ? `/${t}` : '';
}

/** Adds query parameters to a frontend address, keeping its own. */
export function withParams(url: string, params: Record<string, string>): string {
  const u = new URL(url);
  for (const [k, v] of Object.entries(params)) u.searchParams.set(k, v);
  return u.toString();
}
