import { RedirectAllowlist } from './redirect-allowlist';

describe('RedirectAllowlist', () => {
  const list = new RedirectAllowlist(['https://good.com', 'http://localhost:3000/', 'not a url']);
  const base = 'https://good.com/oauth/callback';

  it.each([
    ['https://good.com/oauth/done', 'https://good.com/oauth/done'],
    ['https://GOOD.com/x?y=1', 'https://good.com/x?y=1'],
    ['http://localhost:3000/cb', 'http://localhost:3000/cb'],
    ['/account/bind?tab=wechat', 'https://good.com/account/bind?tab=wechat'],
  ])('accepts %s', (input, expected) => {
    expect(list.resolve(input, base)).toBe(expected);
  });

  it.each([
    '//evil.com',
    '//evil.com/path',
    '/\\evil.com',
    '\\\\evil.com',
    '/\t/evil.com',
    ' https://good.com/',
    'https://good.com.evil.com',
    'https://good.com.evil.com/cb',
    'https://good.com@evil.com',
    'https://user:pw@good.com/',
    'https://evil.com/?https://good.com',
    'http://good.com/',
    'https://good.com:8443/',
    'javascript:alert(1)',
    'data:text/html,hi',
    'good.com/cb',
    'https:/\\evil.com',
    'https://good.com/#frag',
    'https://good.com/\u00e9',
    '',
    'https://good.com/' + 'a'.repeat(3000),
  ])('refuses %j', (input) => {
    expect(list.resolve(input, base)).toBeNull();
  });

  it('refuses relative paths when the base itself is not trusted', () => {
    expect(list.resolve('/x', 'javascript:alert(1)')).toBeNull();
  });

  it('ignores malformed entries and matches exact origins only', () => {
    expect(list.allows('https://good.com')).toBe(true);
    expect(list.allows('http://localhost:3000')).toBe(true);
    expect(list.allows('https://sub.good.com')).toBe(false);
  });
});
