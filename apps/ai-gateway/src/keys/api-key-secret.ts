import { createHash, randomBytes } from 'crypto';

/** Characters of a key shown in lists and logs (enough to recognise it, useless to call with). */
export const KEY_PREFIX_LENGTH = 11;

export interface NewKeySecret {
  key: string;
  prefix: string;
  hash: string;
}

/** `sk-` followed by 256 random bits (base64url). */
export function generateKeySecret(): NewKeySecret {
  const key = `sk-${randomBytes(32).toString('base64url')}`;
  return { key, prefix: key.slice(0, KEY_PREFIX_LENGTH), hash: hashKey(key) };
}

export function hashKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

/** Plausible key syntax: refuses garbage before any lookup. */
export function looksLikeKey(value: string): boolean {
  return /^sk-[A-Za-z0-9_-]{20,200}$/.test(value);
}
