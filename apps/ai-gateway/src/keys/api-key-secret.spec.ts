import { generateKeySecret, hashKey, KEY_PREFIX_LENGTH, looksLikeKey } from './api-key-secret';

describe('API key secrets', () => {
  it('generates unique 256-bit keys with a visible prefix and a SHA-256 hash', () => {
    const a = generateKeySecret();
    const b = generateKeySecret();
    expect(a.key).toMatch(/^sk-[A-Za-z0-9_-]{43}$/);
    expect(a.key).not.toBe(b.key);
    expect(a.prefix).toBe(a.key.slice(0, KEY_PREFIX_LENGTH));
    expect(a.hash).toBe(hashKey(a.key));
    expect(a.hash).toMatch(/^[0-9a-f]{64}$/);
    expect(looksLikeKey(a.key)).toBe(true);
  });

  it('refuses values that cannot be keys before any lookup', () => {
    for (const v of [
      '',
      'sk-',
      'Bearer sk-abc',
      'sk-short',
      `sk-${'a'.repeat(300)}`,
      'sk-has space in it-xxxxxxxxxxxxxxxx',
    ])
      expect(looksLikeKey(v)).toBe(false);
  });
});
