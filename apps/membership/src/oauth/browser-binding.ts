import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { ClientFacts } from '../sessions/client-facts';
import { STATE_TTL_MS } from './oauth2-state.repository';

/**
 * Ties an OAuth / WeChat login or link state to the browser that started it: an HttpOnly,
 * SameSite=Lax cookie (Secure on https) holds a random nonce, and only its SHA-256 is stored with
 * the state. SameSite=Lax still travels on the provider's top-level redirect back to the callback,
 * but a stranger cannot put it into another person's browser, so a callback URL (code + state) or a
 * QR state handed to someone else is refused there. One nonce per browser, reused while it lives, so
 * several tabs can log in at once. These functions read the request's ClientFacts; the controllers
 * send the cookie an issued binding carries.
 */
export const BINDING_COOKIE = 'oauth2_binding';
/**
 * The name on https: the `__Host-` prefix makes browsers refuse the cookie unless this origin set it
 * (Secure, Path=/, no Domain), so a sibling subdomain cannot toss a nonce it knows into a victim's
 * browser and share a binding with it. On https only this name is read.
 */
export const SECURE_BINDING_COOKIE = `__Host-${BINDING_COOKIE}`;

/** The request facts a binding is read from. */
export type BindingClient = Pick<ClientFacts, 'secure' | 'cookie'>;

/** A binding given to a browser: the hash to store with a state, and the Set-Cookie value the answer carries. */
export interface IssuedBinding {
  hash: string;
  setCookie: string;
}

function cookieName(client: BindingClient): string {
  return client.secure ? SECURE_BINDING_COOKIE : BINDING_COOKIE;
}
const NONCE = /^[A-Za-z0-9_-]{43}$/;

export function bindingHash(nonce: string): string {
  return createHash('sha256').update(nonce).digest('hex');
}

/** The binding nonce this request carries, or null. */
export function readBinding(client: BindingClient): string | null {
  const header = client.cookie;
  if (typeof header !== 'string' || header.length > 8192) return null;
  const name = cookieName(client);
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0 || part.slice(0, eq).trim() !== name) continue;
    const value = part.slice(eq + 1).trim();
    if (NONCE.test(value)) return value;
  }
  return null;
}

/** The browser's nonce (reused, or a new one), to be (re)sent as the cookie; its hash is stored with a state. */
export function issueBinding(client: BindingClient): IssuedBinding {
  const nonce = readBinding(client) ?? randomBytes(32).toString('base64url');
  const secure = client.secure ? '; Secure' : '';
  const setCookie = `${cookieName(client)}=${nonce}; Path=/; Max-Age=${Math.floor((2 * STATE_TTL_MS) / 1000)}; HttpOnly; SameSite=Lax${secure}`;
  return { hash: bindingHash(nonce), setCookie };
}

/** True when the request carries the cookie whose hash was stored with the state. */
export function bindingMatches(client: BindingClient, storedHash: string | undefined): boolean {
  const nonce = readBinding(client);
  if (!nonce || typeof storedHash !== 'string' || storedHash.length !== 64) return false;
  return timingSafeEqual(Buffer.from(bindingHash(nonce)), Buffer.from(storedHash));
}

/**
 * Whether this exchange request can show the binding: it carries the cookie, or it comes from a page on
 * the API's own origin (`Sec-Fetch-Site: same-origin`, whose fetches always send cookies).
 */
export function bindingExpected(client: BindingClient & Pick<ClientFacts, 'fetchSite'>): boolean {
  return readBinding(client) !== null || client.fetchSite === 'same-origin';
}
