import { Injectable } from '@nestjs/common';
import { createHash, createHmac } from 'crypto';
import { SecretBox } from '@app/platform';
import { MembershipConfig } from '../config/membership.config';

/**
 * AES-256-GCM for second-factor secrets that must be read back (the authenticator-app secret): a
 * copied database alone does not give the codes. The key is MFA_ENCRYPTION_SECRET; without it (refused in
 * production by MembershipConfig.validateExtra) a development key is derived from JWT_SECRET, which
 * is only as good as that secret and changes with it.
 */
@Injectable()
export class FactorCipher {
  private readonly box: SecretBox;

  constructor(config: MembershipConfig) {
    this.box = new SecretBox(
      config.MFA_ENCRYPTION_SECRET ? decodeKey(config.MFA_ENCRYPTION_SECRET) : developmentKey(config.JWT_SECRET),
    );
  }

  /** `v1.<iv>.<tag>.<ciphertext>` in base64url; `context` (e.g. the member id) is bound as associated data. */
  seal(plain: string, context: string): string {
    return this.box.seal(plain, context);
  }

  /** The plain text, or null when the value was sealed with another key or for another context. */
  open(sealed: string, context: string): string | null {
    return this.box.open(sealed, context);
  }
}

function decodeKey(value: string): Buffer {
  return createHash('sha256').update(`membership:mfa-encryption-key:v1:${value}`).digest();
}

function developmentKey(root: string | undefined): Buffer {
  if (!root) throw new Error('JWT_SECRET is not resolved');
  return createHmac('sha256', root).update('membership:mfa-development-key:v1').digest();
}
