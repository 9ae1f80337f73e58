import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MembershipConfig } from '../../config/membership.config';
import { OAuth2ClientRegistry } from './oauth2-client.registry';

describe("OAuth2ClientRegistry redirect allowlists (audit L6: one merged list let any client redirect to any client's site)", () => {
  const file = join(mkdtempSync(join(tmpdir(), 'registry-')), 'clients.json');
  writeFileSync(
    file,
    JSON.stringify([
      {
        registrationId: 'site-a',
        provider: 'github',
        clientId: 'a',
        clientSecret: 'sa',
        redirectUri: 'https://www.example.com/oauth/callback',
      },
      {
        registrationId: 'partner',
        provider: 'gitee',
        clientId: 'b',
        clientSecret: 'sb',
        redirectUri: 'https://partner.example.org/cb',
      },
    ]),
  );
  const config = Object.assign(new MembershipConfig(), {
    OAUTH2_CLIENTS_FILE: file,
    OAUTH2_REDIRECT_ALLOWLIST: 'https://app.example.com',
  });
  const registry = new OAuth2ClientRegistry(config);

  it('lets each client return only to its own frontend origin and the operator allowlist', () => {
    const a = registry.get('site-a');
    const p = registry.get('partner');
    expect(registry.allowlistOf(a).resolve('https://www.example.com/x', a.redirectUri)).toBe(
      'https://www.example.com/x',
    );
    expect(registry.allowlistOf(a).resolve('https://partner.example.org/cb', a.redirectUri)).toBeNull();
    expect(registry.allowlistOf(p).resolve('https://www.example.com/oauth/callback', p.redirectUri)).toBeNull();
    expect(registry.allowlistOf(p).resolve('https://partner.example.org/next', p.redirectUri)).toBe(
      'https://partner.example.org/next',
    );
    for (const reg of [a, p])
      expect(registry.allowlistOf(reg).resolve('https://app.example.com/after', reg.redirectUri)).toBe(
        'https://app.example.com/after',
      );
  });
});
