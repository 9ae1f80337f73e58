import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes } from 'crypto';

/** Opaque refresh token: 256 random bits. */
export function newRefreshToken(): string {
  return randomBytes(32).toString('base64url');
}

export function hashRefreshToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

function keyFrom(token: string): Buffer {
  return Buffer.from(
    hkdfSync('sha256', Buffer.from(token, 'utf8'), Buffer.alloc(0), 'membership:refresh-successor:v1', 32),
  );
}

/**
 * Seals the successor with a key derived from the presented token. Only someone who holds that
 * token (stored nowhere in clear) can open it, which lets concurrent tabs receive the same successor.
 */
export function sealSuccessor(successor: string, token: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', keyFrom(token), iv);
  const body = Buffer.concat([cipher.update(successor, 'utf8'), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64url');
}

export function openSuccessor(sealed: string, token: string): string | null {
  try {
    const raw = Buffer.from(sealed, 'base64url');
    const decipher = createDecipheriv('aes-256-gcm', keyFrom(token), raw.subarray(0, 12));
    decipher.setAuthTag(raw.subarray(12, 28));
    return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8');
  } catch {
    return null;
  }
}
