import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';
import { OAuth2ClientRegistration, parseOAuth2Clients } from '../clients/oauth2-client-registration';
import { AuthorizationState } from '../oauth2-state.repository';
import { PassportOAuth2Flow } from './passport-oauth2.flow';
import { ProviderAuthorizationFailed, pkcePair } from './provider-flow';

/**
 * GitHub's and Gitee's documented quirks, served locally: GitHub answers the token request
 * form-encoded unless asked for JSON and wants the token in a header plus a User-Agent; Gitee's v5
 * API takes `access_token` as a query parameter.
 */
function body(req: IncomingMessage): Promise<URLSearchParams> {
  return new Promise((resolve) => {
    let s = '';
    req.on('data', (c) => (s += c));
    req.on('end', () => resolve(new URLSearchParams(s)));
  });
}

describe('PassportOAuth2Flow (GitHub and Gitee shapes)', () => {
  let server: Server;
  let base: string;
  const seen: Record<string, any> = {};

  beforeAll(async () => {
    // body() never rejects, so the handler's promise has nothing to lose.
    const serve = async (req: IncomingMessage, res: ServerResponse) => {
      const url = new URL(req.url!, 'http://x');
      if (url.pathname.endsWith('/token')) {
        const form = await body(req);
        seen.token = Object.fromEntries(form);
        seen.tokenAccept = req.headers.accept;
        if (form.get('code') !== 'good-code') {
          res.setHeader('content-type', 'application/json');
          res.statusCode = 400;
          return res.end(
            JSON.stringify({
              error: 'bad_verification_code',
              error_description: 'The code passed is incorrect or expired.',
            }),
          );
        }
        if (req.headers.accept === 'application/json') {
          res.setHeader('content-type', 'application/json');
          return res.end(JSON.stringify({ access_token: 'gho_token', token_type: 'bearer', scope: 'read:user' }));
        }
        res.setHeader('content-type', 'application/x-www-form-urlencoded');
        return res.end('access_token=gho_token&scope=read%3Auser&token_type=bearer');
      }
      if (url.pathname === '/github/user') {
        seen.githubUser = { auth: req.headers.authorization, ua: req.headers['user-agent'], query: url.search };
        if (!req.headers['user-agent'] || !/^(token|Bearer) gho_token$/.test(req.headers.authorization ?? '')) {
          res.statusCode = 401;
          return res.end('{"message":"Requires authentication"}');
        }
        return res.end(
          JSON.stringify({
            id: 583231,
            login: 'octocat',
            name: 'The Octocat',
            avatar_url: 'https://avatars.githubusercontent.com/u/583231',
          }),
        );
      }
      if (url.pathname === '/gitee/api/v5/user') {
        seen.giteeUser = { auth: req.headers.authorization, query: url.searchParams.get('access_token') };
        if (url.searchParams.get('access_token') !== 'gho_token') {
          res.statusCode = 401;
          return res.end('{"message":"401 Unauthorized"}');
        }
        return res.end(
          JSON.stringify({
            id: 1024,
            login: 'gitee-user',
            name: '码云用户',
            avatar_url: 'https://gitee.com/assets/no_portrait.png',
          }),
        );
      }
      res.statusCode = 404;
      res.end();
    };
    server = createServer((req, res) => void serve(req, res));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise((r) => server.close(r)));

  const regs = () =>
    parseOAuth2Clients(
      JSON.stringify([
        {
          registrationId: 'github-app',
          provider: 'github',
          clientId: 'Iv1.abc',
          clientSecret: 'gh-secret',
          redirectUri: 'https://www.example.com/cb',
          authorizationUri: `${base}/github/authorize`,
          tokenUri: `${base}/github/token`,
          userInfoUri: `${base}/github/user`,
        },
        {
          registrationId: 'gitee-app',
          provider: 'gitee',
          clientId: 'gitee-id',
          clientSecret: 'gitee-secret',
          redirectUri: 'https://www.example.com/cb',
          authorizationUri: `${base}/gitee/authorize`,
          tokenUri: `${base}/gitee/token`,
          userInfoUri: `${base}/gitee/api/v5/user`,
        },
      ]),
      'json',
      {},
    );
  const stored = (reg: OAuth2ClientRegistration, codeVerifier?: string): AuthorizationState => ({
    registrationId: reg.registrationId,
    kind: 'standard',
    callbackUrl: `https://api.example.com/login/oauth2/code/${reg.registrationId}`,
    frontendUrl: reg.redirectUri,
    codeVerifier,
  });

  it('builds the authorization URL with state, scopes and the callback; PKCE only when enabled', async () => {
    const [github] = regs();
    const flow = new PassportOAuth2Flow();
    const url = new URL(
      await flow.authorizationUrl(github, {
        state: 'state-123',
        callbackUrl: 'https://api.example.com/login/oauth2/code/github-app',
      }),
    );
    expect(url.origin + url.pathname).toBe(`${base}/github/authorize`);
    expect(Object.fromEntries(url.searchParams)).toEqual({
      response_type: 'code',
      client_id: 'Iv1.abc',
      redirect_uri: 'https://api.example.com/login/oauth2/code/github-app',
      scope: 'read:user user:email',
      state: 'state-123',
    });
    const pkce = pkcePair();
    const withPkce = new URL(
      await flow.authorizationUrl(
        { ...github, registrationId: 'x' },
        { state: 's', callbackUrl: 'https://a/cb', codeChallenge: pkce.challenge },
      ),
    );
    expect(withPkce.searchParams.get('code_challenge')).toBe(pkce.challenge);
    expect(withPkce.searchParams.get('code_challenge_method')).toBe('S256');
  });

  it('GitHub: JSON token answer, token in the Authorization header with a User-Agent, numeric id as subject', async () => {
    const [github] = regs();
    const profile = await new PassportOAuth2Flow().complete(
      github,
      { code: 'good-code', state: 's' },
      stored(github, 'verifier-1'),
    );
    expect(profile).toEqual({
      provider: 'github',
      subject: '583231',
      registrationId: 'github-app',
      nickname: 'The Octocat',
      avatarUrl: 'https://avatars.githubusercontent.com/u/583231',
    });
    expect(seen.tokenAccept).toBe('application/json');
    expect(seen.token).toMatchObject({
      code: 'good-code',
      client_id: 'Iv1.abc',
      client_secret: 'gh-secret',
      code_verifier: 'verifier-1',
      redirect_uri: 'https://api.example.com/login/oauth2/code/github-app',
    });
    expect(seen.githubUser.auth).toBe('Bearer gho_token');
    expect(seen.githubUser.query).toBe('');
  });

  it('Gitee: access_token as a query parameter', async () => {
    const [, gitee] = regs();
    const profile = await new PassportOAuth2Flow().complete(gitee, { code: 'good-code' }, stored(gitee));
    expect(profile).toMatchObject({ provider: 'gitee', subject: '1024', nickname: '码云用户' });
    expect(seen.giteeUser.query).toBe('gho_token');
    expect(seen.token.code_verifier).toBeUndefined();
  });

  it('maps refusals: a bad code, a denied authorization, a missing code', async () => {
    const [github] = regs();
    const flow = new PassportOAuth2Flow();
    await expect(flow.complete(github, { code: 'bad' }, stored(github))).rejects.toMatchObject({
      error: 'bad_verification_code',
    });
    await expect(
      flow.complete(github, { error: 'access_denied', error_description: 'denied' }, stored(github)),
    ).rejects.toMatchObject({ error: 'access_denied' });
    await expect(flow.complete(github, {}, stored(github))).rejects.toBeInstanceOf(ProviderAuthorizationFailed);
    const broken = { ...github, registrationId: 'broken', userInfoUri: `${base}/nope` };
    await expect(flow.complete(broken, { code: 'good-code' }, stored(broken))).rejects.toMatchObject({
      error: 'userinfo_failed',
    });
  });
});
