import { mkdtempSync, writeFileSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { ErrorCode } from '@app/envelope';
import { RunningApp, startMembership } from '../../../../test/support/apps';
import { clientFacts } from '../../../../test/membership/client-facts';
import { SessionsService } from '../sessions/sessions.service';
import { bindingHash } from './browser-binding';
import { OAuth2ClientRegistry } from './clients/oauth2-client.registry';
import { OAuth2LoginService } from './oauth2-login.service';
import { OAuth2StateRepository, randomState } from './oauth2-state.repository';

const FRONTEND = 'https://app.example.com/oauth/callback';
const PROVIDER = 'https://idp.example.org';

/** The nonce a Set-Cookie value gives the browser. */
const nonceOf = (setCookie: string) => setCookie.slice(setCookie.indexOf('=') + 1, setCookie.indexOf(';'));
/** A browser holding the binding cookie `setCookie` gave it. */
const browser = (setCookie: string, ip = '198.51.100.80') =>
  clientFacts({ ip, cookie: `oauth2_binding=${nonceOf(setCookie)}` });

// The real use case on a real database and shared state; the provider (passport-oauth2) is only asked for its authorization URL.
describe('OAuth2LoginService: start, the way to the provider, and the exchange of a login', () => {
  let app: RunningApp;
  let logins: OAuth2LoginService;

  beforeAll(async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'oauth-clients-')), 'clients.yaml');
    writeFileSync(
      file,
      `clients:
  - registrationId: corp
    provider: oauth2
    clientId: spec-client
    clientSecret: spec-secret-0123456789
    authorizationUri: ${PROVIDER}/auth
    tokenUri: ${PROVIDER}/token
    userInfoUri: ${PROVIDER}/me
    userNameAttribute: sub
    scopes: [openid]
    redirectUri: ${FRONTEND}
`,
    );
    app = await startMembership({ LOG_LEVEL: 'silent', OAUTH2_CLIENTS_FILE: file });
    logins = app.app.get(OAuth2LoginService);
  });
  afterAll(() => app?.close());

  const start = () =>
    logins.start(app.app.get(OAuth2ClientRegistry).get('corp'), clientFacts(), { kind: 'standard', viaBegin: true });

  it('answers a way through the request origin and the binding cookie of the starting browser', async () => {
    const { authorization, setCookie } = await start();
    const origin = 'http://members.example.test';
    expect(authorization).toMatchObject({
      authorizationUrl: `${origin}/login/oauth2/authorize/corp?state=${authorization.state}`,
      redirectUri: `${origin}/login/oauth2/code/corp`,
      appId: 'spec-client',
      authType: 'oauth2',
    });
    expect(setCookie).toMatch(/^oauth2_binding=[A-Za-z0-9_-]{43}; Path=\/; Max-Age=\d+; HttpOnly; SameSite=Lax$/);
    // The starting browser goes on to the provider without a new cookie.
    const begun = await logins.begin('corp', authorization.state, browser(setCookie));
    expect(begun.setCookie).toBeUndefined();
    expect(new URL(begun.location).origin).toBe(PROVIDER);
    expect(new URL(begun.location).searchParams.get('state')).toBe(authorization.state);
  });

  it('binds the first other browser to open the way, and refuses the rest', async () => {
    const { authorization, setCookie } = await start();
    const opener = await logins.begin('corp', authorization.state, clientFacts());
    expect(opener.setCookie).toMatch(/^oauth2_binding=/);
    expect(nonceOf(opener.setCookie!)).not.toBe(nonceOf(setCookie));
    await expect(logins.begin('corp', authorization.state, browser(setCookie))).rejects.toMatchObject({
      code: ErrorCode.FORBIDDEN,
    });
    expect((await logins.begin('corp', authorization.state, browser(opener.setCookie!))).setCookie).toBeUndefined();
  });

  it('exchanges a login once, to its browser, opening a session that records the client', async () => {
    const reg = app.app.get(OAuth2ClientRegistry).get('corp');
    const { setCookie } = await start();
    const pending = await logins.pendingLogin(reg, {
      provider: 'oauth2',
      subject: 'spec-subject',
      registrationId: 'corp',
      nickname: 'Spec',
      avatarUrl: null,
    });
    const state = randomState();
    await app.app
      .get(OAuth2StateRepository)
      .savePendingLogin(state, { ...pending, browserHash: bindingHash(nonceOf(setCookie)) });

    const stranger = clientFacts({ cookie: `oauth2_binding=${'x'.repeat(43)}` });
    await expect(logins.exchange(state, stranger)).rejects.toMatchObject({ code: ErrorCode.FORBIDDEN });
    const result = await logins.exchange(state, browser(setCookie, '198.51.100.81'));
    expect(result).toMatchObject({
      memberId: pending.memberId,
      openId: 'spec-subject',
      thirdPartyNickname: 'Spec',
      isNewUser: true,
    });
    const [session] = await app.app.get(SessionsService).list(pending.memberId);
    expect(session).toMatchObject({
      ip: '198.51.100.81',
      deviceName: 'Firefox on Linux',
      loginType: 'oauth2',
      amr: ['oauth'],
    });
    await expect(logins.exchange(state, browser(setCookie))).rejects.toMatchObject({ code: ErrorCode.CODE_INVALID });
  });
});
