import {
  bindingExpected,
  bindingHash,
  bindingMatches,
  issueBinding,
  readBinding,
  SECURE_BINDING_COOKIE,
} from './browser-binding';

const nonce = (c: string) => c.repeat(43);
const client = (secure: boolean, cookie?: string) => ({ secure, cookie });

describe('browser binding cookie', () => {
  it('on https uses a __Host- cookie (Secure, Path=/, no Domain) so no sibling subdomain can set it', () => {
    const { hash, setCookie } = issueBinding(client(true));
    const [pair, ...attrs] = setCookie.split('; ');
    expect(pair.startsWith(`${SECURE_BINDING_COOKIE}=`)).toBe(true);
    expect(attrs).toEqual(expect.arrayContaining(['Path=/', 'HttpOnly', 'SameSite=Lax', 'Secure']));
    expect(attrs.some((a) => a.toLowerCase().startsWith('domain='))).toBe(false);
    expect(hash).toBe(bindingHash(pair.slice(pair.indexOf('=') + 1)));
  });

  it('on https ignores a tossed unprefixed cookie: it is neither read nor adopted', () => {
    const tossed = nonce('a');
    expect(readBinding(client(true, `oauth2_binding=${tossed}`))).toBeNull();
    expect(bindingMatches(client(true, `oauth2_binding=${tossed}`), bindingHash(tossed))).toBe(false);
    expect(issueBinding(client(true, `oauth2_binding=${tossed}`)).hash).not.toBe(bindingHash(tossed));
    // Its own cookie is read and reused (several tabs share one binding).
    const own = nonce('b');
    const reused = issueBinding(client(true, `${SECURE_BINDING_COOKIE}=${own}`));
    expect(reused.hash).toBe(bindingHash(own));
    expect(reused.setCookie.startsWith(`${SECURE_BINDING_COOKIE}=${own};`)).toBe(true);
    expect(bindingMatches(client(true, `x=1; ${SECURE_BINDING_COOKIE}=${own}`), bindingHash(own))).toBe(true);
  });

  it('on plain http (development) uses the unprefixed name, which browsers refuse to give a __Host- prefix', () => {
    const { setCookie } = issueBinding(client(false));
    expect(setCookie.startsWith('oauth2_binding=')).toBe(true);
    expect(setCookie).not.toContain('Secure');
    expect(readBinding(client(false, `oauth2_binding=${nonce('c')}`))).toBe(nonce('c'));
  });

  it('expects the binding from a request that carries the cookie or is a same-origin fetch', () => {
    expect(bindingExpected({ secure: false, cookie: `oauth2_binding=${nonce('d')}`, fetchSite: 'cross-site' })).toBe(
      true,
    );
    expect(bindingExpected({ secure: false, cookie: undefined, fetchSite: 'same-origin' })).toBe(true);
    expect(bindingExpected({ secure: false, cookie: 'other=1', fetchSite: 'cross-site' })).toBe(false);
    expect(bindingExpected({ secure: false, cookie: undefined, fetchSite: undefined })).toBe(false);
  });
});
