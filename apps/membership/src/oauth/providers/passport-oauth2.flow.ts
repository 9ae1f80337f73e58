import { Injectable, Logger } from '@nestjs/common';
import { Strategy as OAuth2Strategy, StrategyOptions } from 'passport-oauth2';
import { ExternalProfile } from '../../identities/external-profile';
import { OAuth2ClientRegistration } from '../clients/oauth2-client-registration';
import { AuthorizationState } from '../oauth2-state.store';
import { AuthorizationRequest, ProviderAuthorizationFailed, ProviderFlow } from './provider-flow';

interface FlowOptions {
  state?: string;
  scope?: string[];
  callbackURL: string;
  codeChallenge?: string;
  codeVerifier?: string;
}

/** passport-oauth2 with state and PKCE kept by us (in SharedState), not in a server session. */
class ConfiguredStrategy extends OAuth2Strategy {
  constructor(
    options: StrategyOptions,
    private readonly reg: OAuth2ClientRegistration,
  ) {
    super({ ...options, state: false, pkce: false } as StrategyOptions, (accessToken: string, _r: string, profile: any, done: any) =>
      done(null, profile),
    );
    // GitHub wants the token in a header; Gitee's v5 API takes it as access_token.
    this._oauth2.useAuthorizationHeaderforGET(reg.provider !== 'gitee');
  }

  authorizationParams(options: FlowOptions): object {
    return options.codeChallenge ? { code_challenge: options.codeChallenge, code_challenge_method: 'S256' } : {};
  }

  tokenParams(options: FlowOptions): object {
    return options.codeVerifier ? { code_verifier: options.codeVerifier } : {};
  }

  userProfile(accessToken: string, done: (err?: unknown, profile?: any) => void): void {
    this._oauth2.get(this.reg.userInfoUri!, accessToken, (err, body) => {
      if (err) return done(new ProviderAuthorizationFailed('userinfo_failed', `user info request failed (${(err as any).statusCode ?? 'network'})`));
      try {
        done(null, JSON.parse(String(body)));
      } catch {
        done(new ProviderAuthorizationFailed('userinfo_failed', 'user info is not JSON'));
      }
    });
  }
}

type Outcome = { redirect: string } | { user: any } | { fail: any } | { error: any };

/** Runs one passport strategy step outside the passport middleware and reports how it ended. */
function run(strategy: OAuth2Strategy, req: any, options: FlowOptions): Promise<Outcome> {
  return new Promise((resolve) => {
    const step = Object.create(strategy);
    step.redirect = (url: string) => resolve({ redirect: url });
    step.success = (user: any) => resolve({ user });
    step.fail = (challenge: any) => resolve({ fail: challenge });
    step.error = (error: any) => resolve({ error });
    step.pass = () => resolve({ error: new Error('strategy passed') });
    try {
      step.authenticate(req, options);
    } catch (error) {
      resolve({ error });
    }
  });
}

/** GitHub, Gitee and generic OAuth 2.0 providers through passport-oauth2. */
@Injectable()
export class PassportOAuth2Flow implements ProviderFlow {
  private readonly log = new Logger('OAuth2');
  private readonly strategies = new Map<string, ConfiguredStrategy>();

  private strategy(reg: OAuth2ClientRegistration): ConfiguredStrategy {
    let s = this.strategies.get(reg.registrationId);
    if (!s) {
      s = new ConfiguredStrategy(
        {
          authorizationURL: reg.authorizationUri!,
          tokenURL: reg.tokenUri!,
          clientID: reg.clientId,
          clientSecret: reg.clientSecret,
          callbackURL: reg.redirectUri,
          scope: reg.scopes,
          customHeaders: { 'User-Agent': 'member-ai-platform', Accept: 'application/json' },
        } as StrategyOptions,
        reg,
      );
      this.strategies.set(reg.registrationId, s);
    }
    return s;
  }

  async authorizationUrl(reg: OAuth2ClientRegistration, r: AuthorizationRequest): Promise<string> {
    const outcome = await run(this.strategy(reg), { query: {}, body: {} }, {
      state: r.state,
      scope: reg.scopes,
      callbackURL: r.callbackUrl,
      codeChallenge: r.codeChallenge,
    });
    if ('redirect' in outcome) return outcome.redirect;
    throw new Error('passport-oauth2 did not produce an authorization URL');
  }

  async complete(reg: OAuth2ClientRegistration, query: Record<string, string>, stored: AuthorizationState): Promise<ExternalProfile> {
    if (!query.error && !query.code) throw new ProviderAuthorizationFailed('invalid_request', 'the provider returned no code');
    const outcome = await run(this.strategy(reg), { query, body: {} }, { callbackURL: stored.callbackUrl, codeVerifier: stored.codeVerifier });
    if ('fail' in outcome) throw new ProviderAuthorizationFailed('access_denied', outcome.fail?.message ?? 'the user denied the authorization');
    if ('error' in outcome) {
      const e = outcome.error;
      if (e instanceof ProviderAuthorizationFailed) throw e;
      if (e?.name === 'AuthorizationError') throw new ProviderAuthorizationFailed(e.code ?? 'server_error', e.message || 'authorization failed');
      if (e?.name === 'TokenError') throw new ProviderAuthorizationFailed(e.code ?? 'invalid_grant', e.message || 'token exchange refused');
      this.log.warn(`${reg.registrationId}: token exchange failed: ${e?.name ?? 'error'} ${e?.oauthError?.statusCode ?? ''}`);
      throw new ProviderAuthorizationFailed('token_exchange_failed', 'the provider did not issue a token');
    }
    if (!('user' in outcome)) throw new ProviderAuthorizationFailed('server_error', 'unexpected provider answer');
    const info = outcome.user ?? {};
    const subject = info[reg.userNameAttribute];
    if (subject === undefined || subject === null || subject === '') {
      throw new ProviderAuthorizationFailed('userinfo_failed', `user info has no ${reg.userNameAttribute}`);
    }
    return {
      provider: reg.provider === 'oauth2' ? `oauth2:${new URL(reg.authorizationUri!).origin}` : reg.provider,
      subject: String(subject),
      registrationId: reg.registrationId,
      nickname: str(info.name) ?? str(info.nickname) ?? str(info.login) ?? str(info.preferred_username),
      avatarUrl: str(info.avatar_url) ?? str(info.picture),
    };
  }
}

function str(v: unknown): string | null {
  return typeof v === 'string' && v ? v : null;
}
