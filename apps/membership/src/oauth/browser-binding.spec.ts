import type { Request, Response } from 'express';
import { bindingHash, bindingMatches, issueBinding, readBinding, SECURE_BINDING_COOKIE } from './browser-binding';

const nonce = (c: string) => c.repeat(43);
const req = (secure: boolean, cookie?: string) => ({ secure, headers: cookie ? { cookie } : {}, get: () => undefined }) as unknown as Request;
const res = () => {
  const cookies: string[] = [];
  return { cookies, append: (name: string, value: string) => name === 'Set-Cookie' && cookies.push(value) } as unknown as Response & { cookies: string[] };
};

describe('browser binding cookie', () => {
  it('on https uses a __Host- cookie (Secure, Path=/, no Domain) so no sibling subdomain can set it', () => {
    const r = res();
    const hash = issueBinding(req(true), r);
    expect(r.cookies).toHaveLength(1);
    const [pair, ...attrs] = r.cookies[0].split('; ');
    expect(pair.startsWith(`${SECURE_BINDING_COOKIE}=`)).toBe(true);
    expect(attrs).toEqual(expect.arrayContaining(['Path=/', 'HttpOnly', 'SameSite=Lax', 'Secure']));
    expect(attrs.some((a) => a.toLowerCase().startsWith('domain='))).toBe(false);
    expect(hash).toBe(bindingHash(pair.slice(pair.indexOf('=') + 1)));
  });

  it('on https ignores a tossed unprefixed cookie: it is neither read nor adopted', () => {
    const tossed = nonce('a');
    expect(readBinding(req(true, `oauth2_binding=${tossed}`))).toBeNull();
    expect(bindingMatches(req(true, `oauth2_binding=${tossed}`), bindingHash(tossed))).toBe(false);
    const r = res();
    expect(issueBinding(req(true, `oauth2_binding=${tossed}`), r)).not.toBe(bindingHash(tossed));
    // Its own cookie is read and reused (several tabs share one binding).
    const own = nonce('b');
    expect(issueBinding(req(true, `${SECURE_BINDING_COOKIE}=${own}`), res())).toBe(bindingHash(own));
    expect(bindingMatches(req(true, `x=1; ${SECURE_BINDING_COOKIE}=${own}`), bindingHash(own))).toBe(true);
  });

  it('on plain http (development) uses the unprefixed name, which browsers refuse to give a __Host- prefix', () => {
    const r = res();
    issueBinding(req(false), r);
    expect(r.cookies[0].startsWith('oauth2_binding=')).toBe(true);
    expect(r.cookies[0]).not.toContain('Secure');
    expect(readBinding(req(false, `oauth2_binding=${nonce('c')}`))).toBe(nonce('c'));
  });
});
