import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadOAuth2ClientsFile, parseOAuth2Clients, resolveEnvReferences } from './oauth2-client-registration';

describe('OAuth2 clients file', () => {
  const env = { GITHUB_SECRET: 'gh-s3cret', MP_TOKEN: 'tok123' };

  it('reads YAML with environment references and provider defaults', () => {
    const yaml = `
clients:
  - registrationId: github-app
    provider: github
    clientId: Iv1.abc
    clientSecret: \${GITHUB_SECRET}
    redirectUri: https://www.example.com/oauth/callback
  - registrationId: wechat-mp
    provider: wechat-mp
    clientId: wx123
    clientSecret: \${MP_SECRET:-fallback}
    token: \${MP_TOKEN}
    redirectUri: https://www.example.com/oauth/callback
`;
    const [gh, mp] = parseOAuth2Clients(yaml, 'yaml', env);
    expect(gh).toMatchObject({
      registrationId: 'github-app',
      clientSecret: 'gh-s3cret',
      authorizationUri: 'https://github.com/login/oauth/authorize',
      userInfoUri: 'https://api.github.com/user',
      userNameAttribute: 'id',
      pkce: false,
      scopes: ['read:user', 'user:email'],
    });
    expect(mp).toMatchObject({ provider: 'wechat-mp', clientSecret: 'fallback', token: 'tok123' });
  });

  it('reads a JSON map keyed by registration id from a file, by extension', () => {
    const dir = mkdtempSync(join(tmpdir(), 'clients-'));
    const file = join(dir, 'clients.json');
    writeFileSync(
      file,
      JSON.stringify({
        corp: {
          provider: 'oidc',
          issuer: 'https://id.example.com',
          clientId: 'a',
          clientSecret: 'b',
          redirectUri: 'https://w.example/cb',
          scopes: 'openid email',
        },
      }),
    );
    const [corp] = loadOAuth2ClientsFile(file, {});
    expect(corp).toMatchObject({
      registrationId: 'corp',
      provider: 'oidc',
      scopes: ['openid', 'email'],
      pkce: true,
      userNameAttribute: 'sub',
    });
    expect(loadOAuth2ClientsFile(undefined, {})).toEqual([]);
    expect(() => loadOAuth2ClientsFile(join(dir, 'missing.yaml'), {})).toThrow(/cannot be read: ENOENT/);
  });

  it('lists every problem at once and never echoes secret values', () => {
    const bad = JSON.stringify([
      { registrationId: 'x', provider: 'github', clientId: 'a', clientSecret: '${NOPE}', redirectUri: 'https://a' },
      { registrationId: 'x', provider: 'oidc', clientId: 'a', clientSecret: 'topsecret', redirectUri: '//evil' },
      { registrationId: 'y', provider: 'facebook' },
      {
        registrationId: 'z',
        provider: 'wechat-mp',
        clientId: 'wx',
        clientSecret: 's',
        redirectUri: 'https://a',
        token: 't',
        encodingAesKey: 'short',
      },
      {
        registrationId: 'g',
        provider: 'oauth2',
        clientId: 'a',
        clientSecret: 's',
        redirectUri: 'https://a',
        tokenUri: 'ftp://x',
      },
    ]);
    let message = '';
    try {
      parseOAuth2Clients(bad, 'json', {});
    } catch (e) {
      message = (e as Error).message;
    }
    expect(message).toContain('environment variable NOPE is not set');
    expect(message).toContain('registrationId: duplicate');
    expect(message).toContain('redirectUri');
    expect(message).toContain('issuer: required for oidc');
    expect(message).toContain('provider: one of');
    expect(message).toContain('token: 3..32');
    expect(message).toContain('encodingAesKey');
    expect(message).toContain('clients[4] (g).tokenUri');
    expect(message).toContain('clients[4] (g).authorizationUri');
    expect(message).not.toContain('topsecret');
  });

  it('reports unparsable files', () => {
    expect(() => parseOAuth2Clients('{', 'json', {})).toThrow(/not valid JSON/);
    expect(() => parseOAuth2Clients('a: [', 'yaml', {})).toThrow(/not valid YAML/);
  });

  it('resolves references inside longer strings', () => {
    expect(resolveEnvReferences('Bearer ${A}-${B:-b}', { A: 'a' }, 'w')).toBe('Bearer a-b');
    // A name like an Object.prototype member is an unset variable, in the process environment too.
    for (const env of [{}, process.env]) {
      expect(resolveEnvReferences('${constructor:-d}', env, 'w')).toBe('d');
      expect(() => resolveEnvReferences('${toString}', env, 'w')).toThrow(
        'w: environment variable toString is not set',
      );
    }
  });
});
