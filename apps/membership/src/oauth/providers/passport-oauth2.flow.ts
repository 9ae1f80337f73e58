import { Injectable, Logger } from '@nestjs/common';
import { Strategy as OAuth2Strategy, StrategyOptions, VerifyCallback } from 'passport-oauth2';
import { ExternalProfile } from '../../identities/external-profile';
import { OAuth2ClientRegistration } from '../clients/oauth2-client-registration';
import { AuthorizationState } from '../oauth2-state.repository';
import { AuthorizationRequest, ProviderAuthorizationFailed, ProviderFlow } from './provider-flow';

interface FlowOptions {
  state?: string;
  scope?: string[];
  callbackURL: string;
  codeChallenge?: string;
  codeVerifier?: string;
}

/** The provider's user-info JSON: an object whose fields we read one by one. */
type UserInfo = Record<string, unknown>;

/** passport-oauth2 with state and PKCE kept by us (in SharedState), not in a server session. */
class ConfiguredStrategy extends OAuth2Strategy {
  constructor(
    options: StrategyOptions,
    private readonly reg: OAuth2ClientRegistration,
  ) {
    super(
      { ...options, state: false, pkce: false },
      (_accessToken: string, _r: string, profile: UserInfo, done: VerifyCallback) => done(null, profile),
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

  userProfile(accessToken: string, done: (err?: unknown, profile?: unknown) => void): void {
    this._oauth2.get(this.reg.userInfoUri!, accessToken, (err, body) => {
      if (err) {
        // A network failure arrives as a plain Error without statusCode, whatever the typings say.
        const status = (err as { statusCode?: number }).statusCode;
        return done(
          new ProviderAuthorizationFailed('userinfo_failed', `user info request failed (${status ?? 'network'})`),
        );
      }
      try {
        done(null, JSON.parse(String(body)));
      } catch {
        done(new ProviderAuthorizationFailed('userinfo_failed', 'user info is not JSON'));
      }
    });
  }
}

/** The request passport-oauth2 reads a step from: the callback's query (code, state, error), and no body. */
interface StepRequest {
  query: Record<string, string>;
  body: Record<string, never>;
}

type Outcome = { redirect: string } | { user: unknown } | { fail: unknown } | { error: unknown };

/** The actions passport adds to a strategy for one authenticate() call. */
interface StrategyStep {
  redirect(url: string): void;
  success(user: unknown): void;
  fail(challenge?: unknown): void;
  error(error: unknown): void;
  pass(): void;
  authenticate(req: StepRequest, options: FlowOptions): void;
}

/** The fields of a passport-oauth2 AuthorizationError / TokenError / InternalOAuthError we read. */
interface StrategyErrorView {
  name?: string;
  code?: string;
  message?: string;
  oauthError?: { statusCode?: number };
}

/** Runs one passport strategy step outside the passport middleware and reports how it ended. */
function run(strategy: OAuth2Strategy, req: StepRequest, options: FlowOptions): Promise<Outcome> {
  return new Promise((resolve) => {
    const step = Object.create(strategy) as StrategyStep;
    step.redirect = (url: string) => resolve({ redirect: url });
    step.success = (user: unknown) => resolve({ user });
    step.fail = (challenge?: unknown) => resolve({ fail: challenge });
    step.error = (error: unknown) => resolve({ error });
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
        },
        reg,
      );
      this.strategies.set(reg.registrationId, s);
    }
    return s;
  }

  async authorizationUrl(reg: OAuth2ClientRegistration, r: AuthorizationRequest): Promise<string> {
    const outcome = await run(
      this.strategy(reg),
      { query: {}, body: {} },
      {
        state: r.state,
        scope: reg.scopes,
        callbackURL: r.callbackUrl,
        codeChallenge: r.codeChallenge,
      },
    );
    if ('redirect' in outcome) return outcome.redirect;
    throw new Error('passport-oauth2 did not produce an authorization URL');
  }

  async complete(
    reg: OAuth2ClientRegistration,
    query: Record<string, string>,
    stored: AuthorizationState,
  ): Promise<ExternalProfile> {
    if (!query.error && !query.code)
      throw new ProviderAuthorizationFailed('invalid_request', 'the provider returned no code');
    const outcome = await run(
      this.strategy(reg),
      { query, body: {} },
      { callbackURL: stored.callbackUrl, codeVerifier: stored.codeVerifier },
    );
    if ('fail' in outcome) {
      const challenge = outcome.fail as { message?: string } | null | undefined;
      throw new ProviderAuthorizationFailed('access_denied', challenge?.message ?? 'the user denied the authorization');
    }
    if ('error' in outcome) {
      if (outcome.error instanceof ProviderAuthorizationFailed) throw outcome.error;
      const e = outcome.error as StrategyErrorView | null | undefined;
      if (e?.name === 'AuthorizationError')
        throw new ProviderAuthorizationFailed(e.code ?? 'server_error', e.message || 'authorization failed');
      if (e?.name === 'TokenError')
        throw new ProviderAuthorizationFailed(e.code ?? 'invalid_grant', e.message || 'token exchange refused');
      this.log.warn(
        `${reg.registrationId}: token exchange failed: ${e?.name ?? 'error'} ${e?.oauthError?.statusCode ?? ''}`,
      );
      throw new ProviderAuthorizationFailed('token_exchange_failed', 'the provider did not issue a token');
    }
    if (!('user' in outcome)) throw new ProviderAuthorizationFailed('server_error', 'unexpected provider answer');
    const info = (outcome.user ?? {}) as UserInfo;
    const subject = info[reg.userNameAttribute];
    // An object or array is no identifier: String() of it would make every such user the same subject.
    if (
      (typeof subject !== 'string' && typeof subject !== 'number' && typeof subject !== 'boolean') ||
      subject === ''
    ) {
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
