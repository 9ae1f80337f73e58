import { hashRefreshToken, newRefreshToken, openSuccessor, sealSuccessor } from './refresh-token.crypto';

describe('refresh token crypto', () => {
  it('makes distinct 256-bit tokens and stable hashes', () => {
    const a = newRefreshToken();
    expect(Buffer.from(a, 'base64url')).toHaveLength(32);
    expect(a).not.toBe(newRefreshToken());
    expect(hashRefreshToken(a)).toMatch(/^[0-9a-f]{64}$/);
    expect(hashRefreshToken(a)).toBe(hashRefreshToken(a));
  });

  it('opens a sealed successor only with the token it was sealed for', () => {
    const token = newRefreshToken();
    const successor = newRefreshToken();
    const sealed = sealSuccessor(successor, token);
    expect(sealed).not.toContain(successor);
    expect(openSuccessor(sealed, token)).toBe(successor);
    expect(openSuccessor(sealed, newRefreshToken())).toBeNull();
    expect(openSuccessor(sealed.slice(0, -4) + 'AAAA', token)).toBeNull();
  });
});
