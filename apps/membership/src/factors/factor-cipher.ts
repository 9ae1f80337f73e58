import { Injectable } from '@nestjs/common';
import { createCipheriv, createDecipheriv, createHash, createHmac, randomBytes } from 'crypto';
import { MembershipConfig } from '../config/membership.config';

const VERSION = 'v1';

/**
 * AES-256-GCM for second-factor secrets that must be read back (the authenticator-app secret): a
 * copied database alone does not give the codes. The key is MFA_ENCRYPTION_SECRET; without it (refused in
 * production by MembershipConfig.validateExtra) a development key is derived from JWT_SECRET, which
 * is only as good as that secret and changes with it.
 */
@Injectable()
export class FactorCipher {
  private readonly key: Buffer;

  constructor(config: MembershipConfig) {
    this.key = config.MFA_ENCRYPTION_SECRET ? decodeKey(config.MFA_ENCRYPTION_SECRET) : developmentKey(config.JWT_SECRET);
  }

  /** `v1.<iv>.<tag>.<ciphertext>` in base64url; `context` (e.g. the member id) is bound as associated data. */
  seal(plain: string, context: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    cipher.setAAD(Buffer.from(context));
    const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return [VERSION, iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), body.toString('base64url')].join('.');
  }

  /** The plain text, or null when the value was sealed with another key or for another context. */
  open(sealed: string, context: string): string | null {
    const [version, iv, tag, body] = sealed.split('.');
    if (version !== VERSION || !iv || !tag || body === undefined) return null;
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv, 'base64url'));
      decipher.setAAD(Buffer.from(context));
      decipher.setAuthTag(Buffer.from(tag, 'base64url'));
      return Buffer.concat([decipher.update(Buffer.from(body, 'base64url')), decipher.final()]).toString('utf8');
    } catch {
      return null;
    }
  }
}

function decodeKey(value: string): Buffer {
  return createHash('sha256').update(`membership:mfa-encryption-key:v1:${value}`).digest();
}

function developmentKey(root: string | undefined): Buffer {
  if (!root) throw new Error('JWT_SECRET is not resolved');
  return createHmac('sha256', root).update('membership:mfa-development-key:v1').digest();
}
