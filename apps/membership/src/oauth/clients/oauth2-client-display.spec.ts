import { parseOAuth2Clients } from './oauth2-client-registration';

const entry = (extra: string) => `
clients:
  - registrationId: app
    provider: github
    clientId: Iv1.abc
    clientSecret: s
    redirectUri: https://www.example.com/auth/callback
${extra}`;

describe('OAuth2 clients file: login-button fields (clientName, icon, appTypes)', () => {
  it('defaults the name and icon per provider and lists every app type when appTypes is absent', () => {
    const defaults = (provider: string, more = '') =>
      parseOAuth2Clients(
        `- {registrationId: x, provider: ${provider}, clientId: c, clientSecret: s, redirectUri: 'https://w.example.com/cb', issuer: 'https://id.example.com', authorizationUri: 'https://a.example.com', tokenUri: 'https://a.example.com/t', userInfoUri: 'https://a.example.com/u', token: tok123 ${more}}`,
        'yaml',
        {},
      )[0];
    expect(defaults('github')).toMatchObject({
      clientName: 'GitHub',
      icon: 'i-simple-icons-github',
      appTypes: undefined,
    });
    expect(defaults('gitee')).toMatchObject({ clientName: 'Gitee', icon: 'i-simple-icons-gitee' });
    expect(defaults('wechat-open')).toMatchObject({ clientName: 'WeChat', icon: 'i-simple-icons-wechat' });
    expect(defaults('wechat-mp')).toMatchObject({ icon: 'i-simple-icons-wechat' });
    expect(defaults('oidc')).toMatchObject({ clientName: 'OpenID Connect', icon: 'i-simple-icons-openid' });
    expect(defaults('oauth2')).toMatchObject({ clientName: 'OAuth 2.0', icon: 'i-lucide-shield' });
  });

  it('takes clientName, icon and appTypes (list or string) from the entry', () => {
    const [reg] = parseOAuth2Clients(
      entry('    clientName: 码云\n    icon: i-simple-icons-gitee\n    appTypes: site, admin'),
      'yaml',
      {},
    );
    expect(reg).toMatchObject({ clientName: '码云', icon: 'i-simple-icons-gitee', appTypes: ['site', 'admin'] });
    expect(parseOAuth2Clients(entry('    appTypes: [site]'), 'yaml', {})[0].appTypes).toEqual(['site']);
  });

  it('refuses a bad icon, an empty or malformed appTypes and an over-long name, naming each', () => {
    expect(() => parseOAuth2Clients(entry('    icon: "<img src=x>"'), 'yaml', {})).toThrow(
      /clients\[0\] \(app\)\.icon/,
    );
    expect(() => parseOAuth2Clients(entry('    appTypes: []'), 'yaml', {})).toThrow(/appTypes/);
    expect(() => parseOAuth2Clients(entry('    appTypes: [site, "a b/c"]'), 'yaml', {})).toThrow(/appTypes/);
    expect(() => parseOAuth2Clients(entry(`    clientName: ${'x'.repeat(65)}`), 'yaml', {})).toThrow(/clientName/);
  });
});
