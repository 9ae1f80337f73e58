/**
 * Third-party login against a real OpenID Connect / OAuth 2.0 server (oidc-provider in a child
 * process): the `oidc` client goes through openid-client (PKCE, nonce, ID token), the generic
 * `oauth2` client through passport-oauth2 (PKCE), both over real HTTP against the running app.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { Secret, TOTP } from 'otpauth';
import { RunningApp, startMembership } from '../../support/apps';
import { Browser } from '../../support/browser';
import { OidcTestProvider, followProvider, startOidcProvider } from '../../support/oidc-provider';

const FRONTEND = 'https://www.example.com/oauth/callback';

describe('OAuth 2.0 / OIDC login against a real provider', () => {
  let idp: OidcTestProvider;
  let app: RunningApp;

  /** The user's browser (cookies of the app's origin); each test starts with a fresh one. */
  let browser: Browser;
  beforeEach(() => {
    browser = new Browser();
  });

  /**
   * An API call. Like the mortise site's fetch of a cross-origin API without credentials it neither sends
   * nor keeps cookies, unless `browser` is given (a same-origin page or `credentials: 'include'`).
   */
  const api = async (path: string, init: RequestInit & { token?: string; browser?: Browser } = {}) => {
    const headers: Record<string, string> = {
      ...(init.headers as Record<string, string>),
      ...(init.browser?.headers() ?? {}),
    };
    if (init.token) headers.authorization = `Bearer ${init.token}`;
    if (init.body) headers['content-type'] = 'application/json';
    const res = await fetch(app.url + path, { ...init, headers, redirect: 'manual' });
    init.browser?.store(res);
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null, headers: res.headers };
  };

  /** The browser opens a login authorizationUrl (the app's /login/oauth2/authorize hop): the provider URL it is sent to. */
  const beginHop = async (authorizationUrl: string, b: Browser = browser) => {
    const res = await b.navigate(authorizationUrl);
    const text = await res.text();
    if (res.status !== 302) throw new Error(`authorize hop answered ${res.status}: ${text}`);
    return res.headers.get('location')!;
  };

  /** Drives the browser part: (the app's authorize hop,) provider login/consent, back to the app's callback. */
  const throughProvider = async (authorizationUrl: string, b: Browser = browser) =>
    followProvider(
      authorizationUrl.startsWith(app.url) ? await beginHop(authorizationUrl, b) : authorizationUrl,
      idp.issuer,
    );

  /** Calls the app's callback as the browser would and returns the frontend address it redirects to. */
  const appCallback = async (callback: URL | string, b: Browser = browser) => {
    const res = await b.navigate(callback);
    const text = await res.text();
    expect(res.status === 302 ? text : 'json').toBe(res.status === 302 ? '' : 'json');
    return {
      status: res.status,
      location: res.headers.get('location') ? new URL(res.headers.get('location')!) : null,
      body: text ? JSON.parse(text) : null,
    };
  };

  /** `from`: the client address (X-Forwarded-For from loopback), for a test past the per-address limit of the ones before. */
  const login = async (registrationId: string, from?: string) => {
    const start = await api(
      `/api/v1/app/oauth2/auth-url/${registrationId}`,
      from ? { headers: { 'x-forwarded-for': from } } : {},
    );
    expect(start.status).toBe(200);
    const providerUrl = await beginHop(start.body.data.authorizationUrl);
    const back = await followProvider(providerUrl, idp.issuer);
    const cb = await appCallback(back);
    if (cb.status !== 302) throw new Error(`callback answered ${cb.status}: ${JSON.stringify(cb.body)}`);
    const state = cb.location!.searchParams.get('state')!;
    expect(cb.location!.origin + cb.location!.pathname).toBe(FRONTEND);
    const exchanged = await api(
      `/api/v1/app/oauth2/callback?state=${state}`,
      from ? { headers: { 'x-forwarded-for': from } } : {},
    );
    return { start: start.body.data, providerUrl, back, state, exchanged };
  };

  beforeAll(async () => {
    idp = await startOidcProvider();
    process.env.TEST_OIDC_CLIENT_SECRET = 'oidc-secret-0123456789';
    const dir = mkdtempSync(join(tmpdir(), 'oauth-clients-'));
    const file = join(dir, 'clients.yaml');
    writeFileSync(
      file,
      `clients:
  - registrationId: corp-oidc
    provider: oidc
    issuer: ${idp.issuer}
    clientId: membership-oidc
    clientSecret: \${TEST_OIDC_CLIENT_SECRET}
    scopes: openid profile email
    redirectUri: ${FRONTEND}
  - registrationId: corp-oauth2
    provider: oauth2
    clientId: membership-generic
    clientSecret: generic-secret-0123456789
    authorizationUri: ${idp.issuer}/auth
    tokenUri: ${idp.issuer}/token
    userInfoUri: ${idp.issuer}/me
    userNameAttribute: sub
    scopes: [openid, profile]
    redirectUri: ${FRONTEND}
  - registrationId: corp-partner
    provider: oauth2
    clientId: partner-client
    clientSecret: partner-secret-0123456789
    authorizationUri: ${idp.issuer}/auth
    tokenUri: ${idp.issuer}/token
    userInfoUri: ${idp.issuer}/me
    redirectUri: https://partner.example.org/cb
`,
    );
    app = await startMembership({ OAUTH2_CLIENTS_FILE: file, OAUTH2_REDIRECT_ALLOWLIST: 'https://app.example.com' });
    // (corp-partner, below, belongs to another site: its frontend origin must not become a redirect target of the others.)
    await idp.configure([
      {
        client_id: 'membership-oidc',
        client_secret: 'oidc-secret-0123456789',
        redirect_uris: [`${app.url}/login/oauth2/code/corp-oidc`],
      },
      {
        client_id: 'membership-generic',
        client_secret: 'generic-secret-0123456789',
        redirect_uris: [`${app.url}/login/oauth2/code/corp-oauth2`],
        token_endpoint_auth_method: 'client_secret_post',
      },
    ]);
  });

  afterAll(async () => {
    await app?.close();
    await idp?.close();
  });

  beforeEach(() => idp.setAccount('alice'));

  it('logs in through OIDC with PKCE and nonce, exchanges the state once, and the token works', async () => {
    const { start, providerUrl, exchanged, state } = await login('corp-oidc');
    expect(start.authorizationUrl).toBe(`${app.url}/login/oauth2/authorize/corp-oidc?state=${start.state}`);
    const url = new URL(providerUrl);
    expect(url.origin).toBe(idp.issuer);
    expect(url.searchParams.get('code_challenge_method')).toBe('S256');
    expect(url.searchParams.get('code_challenge')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(url.searchParams.get('nonce')).toBeTruthy();
    expect(url.searchParams.get('state')).toBe(start.state);
    expect(start).toMatchObject({
      appId: 'membership-oidc',
      redirectUri: `${app.url}/login/oauth2/code/corp-oidc`,
      scope: 'openid profile email',
      authType: 'oidc',
    });

    expect(exchanged.status).toBe(200);
    expect(exchanged.body.code).toBe(200);
    const data = exchanged.body.data;
    expect(data).toMatchObject({
      openId: 'alice',
      thirdPartyNickname: 'Alice Liddell',
      thirdPartyAvatarUrl: 'https://img.example/alice.png',
      isNewUser: true,
      isBound: false,
      tokenType: 'Bearer',
    });
    expect(typeof data.memberId).toBe('string');
    expect(data.token).toBeTruthy();
    expect(data.refreshToken).toBeTruthy();

    const profile = await api('/api/v1/app/auth/profile', { token: data.token });
    expect(profile.status).toBe(200);
    expect(String(profile.body.data.id)).toBe(data.memberId);
    expect(profile.body.data.identities).toEqual([
      { provider: 'corp-oidc', openId: 'alice', nickname: 'Alice Liddell', avatarUrl: 'https://img.example/alice.png' },
    ]);

    const again = await api(`/api/v1/app/oauth2/callback?state=${state}`);
    expect(again.status).toBe(400);
    expect(again.body.code).toBe(10003);
  });

  it('maps a repeat login to the same member, another account to another member', async () => {
    const first = await login('corp-oidc');
    const second = await login('corp-oidc');
    expect(second.exchanged.body.data.memberId).toBe(first.exchanged.body.data.memberId);
    expect(second.exchanged.body.data.isNewUser).toBe(false);
    idp.setAccount('bob');
    const bob = await login('corp-oidc');
    expect(bob.exchanged.body.data.openId).toBe('bob');
    expect(bob.exchanged.body.data.memberId).not.toBe(first.exchanged.body.data.memberId);
  });

  it('logs in through the generic passport-oauth2 client with PKCE, same member on repeat', async () => {
    const first = await login('corp-oauth2');
    expect(new URL(first.providerUrl).searchParams.get('code_challenge')).toBeTruthy();
    expect(first.start.authType).toBe('oauth2');
    expect(first.exchanged.status).toBe(200);
    expect(first.exchanged.body.data).toMatchObject({ openId: 'alice', thirdPartyNickname: 'Alice Liddell' });
    const second = await login('corp-oauth2');
    expect(second.exchanged.body.data.memberId).toBe(first.exchanged.body.data.memberId);
    expect(second.exchanged.body.data.isNewUser).toBe(false);
  });

  it('refuses a replayed callback state', async () => {
    const start = await api('/api/v1/app/oauth2/auth-url/corp-oidc');
    const back = await throughProvider(start.body.data.authorizationUrl);
    expect((await appCallback(back)).status).toBe(302);
    const replay = await appCallback(back);
    expect(replay.status).toBe(400);
    expect(replay.body).toMatchObject({
      code: 400,
      message: expect.stringMatching(/unknown, expired or already used/),
    });
  });

  it('refuses a state issued for another registration, and burns it', async () => {
    const start = await api('/api/v1/app/oauth2/auth-url/corp-oauth2');
    const back = await throughProvider(start.body.data.authorizationUrl);
    expect(back.pathname).toBe('/login/oauth2/code/corp-oauth2');
    const foreign = new URL(back);
    foreign.pathname = '/login/oauth2/code/corp-oidc';
    const refused = await appCallback(foreign);
    expect(refused.status).toBe(400);
    expect(refused.body.message).toMatch(/another client/);
    expect((await appCallback(back)).status).toBe(400);
  });

  it.each(['corp-oidc', 'corp-oauth2'])(
    '%s: a code bound to another PKCE challenge is refused by the provider (injected code)',
    async (registrationId) => {
      const a = await api(`/api/v1/app/oauth2/auth-url/${registrationId}`);
      const b = await api(`/api/v1/app/oauth2/auth-url/${registrationId}`);
      const backA = await throughProvider(a.body.data.authorizationUrl);
      // Same browser for both (the binding passes): the provider's PKCE check is what refuses the code.
      await beginHop(b.body.data.authorizationUrl);
      // The attacker's code (challenge A) delivered with the victim's state (verifier B).
      const injected = new URL(backA);
      injected.searchParams.set('state', b.body.data.state);
      const cb = await appCallback(injected);
      expect(cb.status).toBe(302);
      expect(cb.location!.searchParams.get('error')).toBe('invalid_grant');
      expect(cb.location!.searchParams.get('state')).toBeNull();
    },
  );

  it('an authorization request without the PKCE challenge is refused and nothing can be exchanged', async () => {
    const start = await api('/api/v1/app/oauth2/auth-url/corp-oidc');
    const stripped = new URL(await beginHop(start.body.data.authorizationUrl));
    stripped.searchParams.delete('code_challenge');
    stripped.searchParams.delete('code_challenge_method');
    const back = await throughProvider(stripped.toString());
    expect(back.searchParams.get('code')).toBeNull();
    const cb = await appCallback(back);
    expect(cb.status).toBe(302);
    expect(cb.location!.searchParams.get('error')).toBe('invalid_request');
    expect(cb.location!.searchParams.get('state')).toBeNull();
  });

  it('refuses a state that lost its PKCE verifier (e.g. stored before PKCE was enabled) without exchanging the code', async () => {
    const start = await api('/api/v1/app/oauth2/auth-url/corp-oidc');
    const db = new Client({ connectionString: app.dbUrl });
    await db.connect();
    try {
      const { rowCount } = await db.query(
        `UPDATE shared_state SET value = (value::jsonb - 'codeVerifier')::text WHERE key = $1`,
        [`oauth2:authz:${start.body.data.state}`],
      );
      expect(rowCount).toBe(1);
    } finally {
      await db.end();
    }
    const cb = await appCallback(await throughProvider(start.body.data.authorizationUrl));
    expect(cb.status).toBe(400);
    expect(cb.body.message).toMatch(/PKCE verifier/);
  });

  it.each(['corp-oidc', 'corp-oauth2'])(
    '%s: a provider error (user denies) goes back to the frontend with error, no login',
    async (registrationId) => {
      const start = await api(`/api/v1/app/oauth2/auth-url/${registrationId}`);
      idp.denyNext();
      const back = await throughProvider(start.body.data.authorizationUrl);
      expect(back.searchParams.get('error')).toBe('access_denied');
      const cb = await appCallback(back);
      expect(cb.status).toBe(302);
      expect(cb.location!.searchParams.get('error')).toBe('access_denied');
      expect(cb.location!.searchParams.get('state')).toBeNull();
      expect((await api(`/api/v1/app/oauth2/callback?state=${start.body.data.state}`)).status).toBe(400);
    },
  );

  it('refuses a forged code with a valid state', async () => {
    const start = await api('/api/v1/app/oauth2/auth-url/corp-oidc');
    await beginHop(start.body.data.authorizationUrl);
    const cb = await appCallback(
      `${app.url}/login/oauth2/code/corp-oidc?code=forged&state=${start.body.data.state}&iss=${encodeURIComponent(idp.issuer)}`,
    );
    expect(cb.status).toBe(302);
    expect(cb.location!.searchParams.get('error')).toBe('invalid_grant');
  });

  it.each([
    '//evil.com',
    '/\\evil.com',
    'https://www.example.com.evil.com/cb',
    'https://www.example.com@evil.com/cb',
    'https://evil.com/cb',
    'javascript:alert(1)',
  ])('refuses redirectUri %s', async (redirectUri) => {
    const res = await api(`/api/v1/app/oauth2/auth-url/corp-oidc?redirectUri=${encodeURIComponent(redirectUri)}`);
    expect(res.status).toBe(400);
    expect(res.body.code).toBe(10000);
  });

  it('returns to an allowlisted frontend page', async () => {
    const start = await api(
      `/api/v1/app/oauth2/auth-url/corp-oidc?redirectUri=${encodeURIComponent('https://app.example.com/after-login?from=x')}`,
    );
    expect(start.status).toBe(200);
    const cb = await appCallback(await throughProvider(start.body.data.authorizationUrl));
    expect(cb.location!.origin + cb.location!.pathname).toBe('https://app.example.com/after-login');
    expect(cb.location!.searchParams.get('from')).toBe('x');
    expect((await api(`/api/v1/app/oauth2/callback?state=${cb.location!.searchParams.get('state')}`)).status).toBe(200);
  });

  it('answers 404 for an unknown client, 400 for junk callback states', async () => {
    expect((await api('/api/v1/app/oauth2/auth-url/nope')).body.code).toBe(404);
    expect((await appCallback(`${app.url}/login/oauth2/code/corp-oidc?code=x`)).status).toBe(400);
    expect((await appCallback(`${app.url}/login/oauth2/code/corp-oidc?code=x&state=${'a'.repeat(40)}`)).status).toBe(
      400,
    );
    expect((await api('/api/v1/app/oauth2/callback')).status).toBe(400);
    expect((await api('/api/v1/app/oauth2/callback?state=short')).body.code).toBe(10003);
  });

  it('lets a member link, list and unlink identities; never the last way to log in; never one owned by another member', async () => {
    const reg = await api('/api/v1/app/auth/register', {
      method: 'POST',
      body: JSON.stringify({ username: 'carol_01', password: 'carol-password-1' }),
    });
    expect(reg.status).toBe(200);
    // Register opens no session: log in next.
    const carol = (
      await api('/api/v1/app/auth/login', {
        method: 'POST',
        body: JSON.stringify({ account: 'carol_01', password: 'carol-password-1' }),
      })
    ).body.data;
    idp.setAccount('bob');
    const link = await api('/api/v1/app/oauth2/identities/link/corp-oauth2', {
      method: 'POST',
      token: carol.token,
      browser,
    });
    expect(link.status).toBe(200);
    const linked = await appCallback(await throughProvider(link.body.data.authorizationUrl));
    expect(linked.location!.searchParams.get('linked')).toBe('corp-oauth2');

    const list = await api('/api/v1/app/oauth2/identities', { token: carol.token });
    expect(list.body.data).toHaveLength(1);
    expect(list.body.data[0]).toMatchObject({ registrationId: 'corp-oauth2', openId: 'bob' });

    // Logging in with that identity now lands on carol.
    const viaBob = await login('corp-oauth2');
    expect(viaBob.exchanged.body.data.memberId).toBe(carol.memberId);
    expect(viaBob.exchanged.body.data.isBound).toBe(true);

    // The same identity cannot be linked to a second member.
    await api('/api/v1/app/auth/register', {
      method: 'POST',
      body: JSON.stringify({ username: 'dave_01', password: 'dave-password-1' }),
    });
    const dave = (
      await api('/api/v1/app/auth/login', {
        method: 'POST',
        body: JSON.stringify({ account: 'dave_01', password: 'dave-password-1' }),
      })
    ).body.data;
    const steal = await api('/api/v1/app/oauth2/identities/link/corp-oauth2', {
      method: 'POST',
      token: dave.token,
      browser,
    });
    const refused = await appCallback(await throughProvider(steal.body.data.authorizationUrl));
    expect(refused.location!.searchParams.get('error')).toBe('already_linked');

    // Carol has a password, so unlinking is allowed.
    const del = await api(`/api/v1/app/oauth2/identities/${list.body.data[0].id}`, {
      method: 'DELETE',
      token: carol.token,
    });
    expect(del.status).toBe(200);
    expect((await api('/api/v1/app/oauth2/identities', { token: carol.token })).body.data).toHaveLength(0);

    // A member created by OIDC has no other way in: unlinking its only identity is refused.
    idp.setAccount('alice');
    const oidcOnly = (await login('corp-oidc')).exchanged.body.data;
    const mine = (await api('/api/v1/app/oauth2/identities', { token: oidcOnly.token })).body.data;
    expect(mine).toHaveLength(1);
    const last = await api(`/api/v1/app/oauth2/identities/${mine[0].id}`, { method: 'DELETE', token: oidcOnly.token });
    expect(last.status).toBe(409);
    expect(
      (await api(`/api/v1/app/oauth2/identities/${mine[0].id}`, { method: 'DELETE', token: carol.token })).status,
    ).toBe(404);
    expect((await api('/api/v1/app/oauth2/identities')).status).toBe(401);
  });

  describe('browser binding of login and link states (audit M3)', () => {
    it('login CSRF: a callback URL (code + state) carried to another browser is refused and logs nobody in', async () => {
      idp.setAccount('bob');
      const start = await api('/api/v1/app/oauth2/auth-url/corp-oidc');
      const attacker = new Browser();
      const back = await throughProvider(start.body.data.authorizationUrl, attacker);
      const victim = new Browser();
      const refused = await appCallback(back, victim);
      expect(refused.status).toBe(403);
      expect(refused.body).toMatchObject({ code: 403, message: expect.stringMatching(/another browser/) });
      // The attacker's own browser cannot use it afterwards either (single use).
      expect((await appCallback(back, attacker)).status).toBe(400);
    });

    it('link CSRF: a victim who finishes an attacker-started link in her browser is refused; her identity stays unlinked', async () => {
      await api('/api/v1/app/auth/register', {
        method: 'POST',
        body: JSON.stringify({ username: 'mallory_01', password: 'mallory-password-1' }),
      });
      const mallory = (
        await api('/api/v1/app/auth/login', {
          method: 'POST',
          body: JSON.stringify({ account: 'mallory_01', password: 'mallory-password-1' }),
        })
      ).body.data;
      const attacker = new Browser();
      const link = await api('/api/v1/app/oauth2/identities/link/corp-oauth2', {
        method: 'POST',
        token: mallory.token,
        browser: attacker,
      });
      expect(link.status).toBe(200);
      expect(attacker.cookie()).toMatch(/oauth2_binding=/);
      // The victim follows the link and signs in at the provider as herself.
      idp.setAccount('bob');
      const victim = new Browser();
      const back = await throughProvider(link.body.data.authorizationUrl, victim);
      const refused = await appCallback(back, victim);
      expect(refused.status).toBe(403);
      expect((await api('/api/v1/app/oauth2/identities', { token: mallory.token })).body.data).toEqual([]);
    });

    it('a link state dies with the session that started it: after logout (or a password reset) its callback links nothing', async () => {
      // Pre-hijack persistence: a claimant keeps a link state of the account open; the address owner then
      // resets the password (which ends every session). The state must not attach the claimant's identity.
      await api('/api/v1/app/auth/register', {
        method: 'POST',
        body: JSON.stringify({ username: 'trudy_01', password: 'trudy-password-1' }),
      });
      const signIn = async () =>
        (
          await api('/api/v1/app/auth/login', {
            method: 'POST',
            body: JSON.stringify({ account: 'trudy_01', password: 'trudy-password-1' }),
          })
        ).body.data;
      const trudy = await signIn();
      idp.setAccount('bob');
      // Control: with the session alive the identity links (so it is free), then it is unlinked again.
      const first = await api('/api/v1/app/oauth2/identities/link/corp-oauth2', {
        method: 'POST',
        token: trudy.token,
        browser,
      });
      expect(
        (await appCallback(await throughProvider(first.body.data.authorizationUrl))).location!.searchParams.get(
          'linked',
        ),
      ).toBe('corp-oauth2');
      const linked = (await api('/api/v1/app/oauth2/identities', { token: trudy.token })).body.data;
      expect(linked).toHaveLength(1);
      expect(
        (await api(`/api/v1/app/oauth2/identities/${linked[0].id}`, { method: 'DELETE', token: trudy.token })).status,
      ).toBe(200);

      const link = await api('/api/v1/app/oauth2/identities/link/corp-oauth2', {
        method: 'POST',
        token: trudy.token,
        browser,
      });
      expect(link.status).toBe(200);
      const back = await throughProvider(link.body.data.authorizationUrl);
      expect((await api('/api/v1/app/auth/logout', { method: 'POST', token: trudy.token })).status).toBe(200);
      const cb = await appCallback(back);
      expect(cb.status).toBe(302);
      expect(cb.location!.searchParams.get('linked')).toBeNull();
      expect(cb.location!.searchParams.get('error')).toBe('login_failed');
      expect((await api('/api/v1/app/oauth2/identities', { token: (await signIn()).token })).body.data).toEqual([]);
    });

    it('the authorize hop binds the first browser to open it; another browser is refused there', async () => {
      const start = await api('/api/v1/app/oauth2/auth-url/corp-oauth2');
      const first = new Browser();
      expect((await first.navigate(start.body.data.authorizationUrl)).status).toBe(302);
      expect((await first.navigate(start.body.data.authorizationUrl)).status).toBe(302);
      const other = await new Browser().navigate(start.body.data.authorizationUrl);
      expect(other.status).toBe(403);
      expect(
        (await new Browser().navigate(`${app.url}/login/oauth2/authorize/corp-oidc?state=${start.body.data.state}`))
          .status,
      ).toBe(400);
    });

    it('a browser that fetched the auth URL with its cookie is bound from the start; the exchange then checks the cookie', async () => {
      const start = await api('/api/v1/app/oauth2/auth-url/corp-oidc', { browser });
      expect(browser.cookie()).toMatch(/oauth2_binding=/);
      const cb = await appCallback(await throughProvider(start.body.data.authorizationUrl));
      expect(cb.status).toBe(302);
      const state = cb.location!.searchParams.get('state')!;
      // Another browser (its own cookie, or a same-origin page without it) cannot take the result ...
      expect(
        (
          await api(`/api/v1/app/oauth2/callback?state=${state}`, {
            browser: new Browser(),
            headers: { 'sec-fetch-site': 'same-origin' },
          })
        ).status,
      ).toBe(403);
      const elsewhere = new Browser();
      elsewhere.set('oauth2_binding', 'x'.repeat(43));
      expect((await api(`/api/v1/app/oauth2/callback?state=${state}`, { browser: elsewhere })).status).toBe(403);
      // ... and the refusal did not use it up for its owner.
      const mine = await api(`/api/v1/app/oauth2/callback?state=${state}`, { browser });
      expect(mine.status).toBe(200);
    });
  });

  it('a member with a second factor signing in through OIDC gets the challenge (with the third-party facts), then amr oauth+otp+mfa; unlinking needs a step-up', async () => {
    idp.setAccount('bob');
    const first = (await login('corp-oidc', '198.51.100.25')).exchanged.body.data;
    const claims = (token: string) => JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString('utf8'));
    expect(claims(first.token).amr).toEqual(['oauth']);
    const begun = await api('/api/v1/app/security/totp', { method: 'POST', token: first.token });
    const totp = new TOTP({
      secret: Secret.fromBase32(begun.body.data.secret),
      digits: 6,
      period: 30,
      algorithm: 'SHA1',
    });
    const confirmed = await api('/api/v1/app/security/totp/confirm', {
      method: 'POST',
      token: first.token,
      body: JSON.stringify({ code: totp.generate() }),
    });
    expect(confirmed.status).toBe(200);
    const recoveryCodes = confirmed.body.data.recoveryCodes as string[];

    const challenged = (await login('corp-oidc', '198.51.100.25')).exchanged;
    expect(challenged.status).toBe(200);
    expect(challenged.body.data).toMatchObject({
      mfaRequired: true,
      methods: ['totp', 'recovery_code'],
      enrolmentRequired: false,
      openId: 'bob',
      isNewUser: false,
    });
    expect(challenged.body.data.token).toBeUndefined();
    const done = await api('/api/v1/app/auth/mfa/verify', {
      method: 'POST',
      body: JSON.stringify({
        mfaToken: challenged.body.data.mfaToken,
        method: 'recovery_code',
        code: recoveryCodes[0],
      }),
    });
    expect(done.status).toBe(200);
    expect(claims(done.body.data.token)).toMatchObject({ amr: ['oauth', 'otp', 'mfa'], loginType: 'oidc' });

    // The first session showed no factor: unlinking is refused until a step-up (then the last-way rule answers).
    const mine = (await api('/api/v1/app/oauth2/identities', { token: done.body.data.token })).body.data;
    const unlink = await api(`/api/v1/app/oauth2/identities/${mine[0].id}`, { method: 'DELETE', token: first.token });
    expect(unlink.status).toBe(403);
    expect(unlink.body).toEqual({
      code: 10010,
      message: expect.stringContaining('authenticator app'),
      data: { required: 'totp', methods: ['totp', 'passkey', 'recovery_code'] },
    });
    const afterStepUp = await api(`/api/v1/app/oauth2/identities/${mine[0].id}`, {
      method: 'DELETE',
      token: done.body.data.token,
    });
    expect(afterStepUp.status).toBe(409);
  });
});
