import { Injectable } from '@nestjs/common';
import { createHmac } from 'crypto';
import { MembershipConfig } from '../config/membership.config';

/** Keys derived from JWT_SECRET, one per purpose, so no key signs two kinds of thing. */
@Injectable()
export class TokenSecrets {
  readonly accessToken: string;
  /** HMAC key of verification-code hashes: a leaked table cannot be brute-forced without it. */
  readonly verificationCode: Buffer;
  /** HMAC key of recovery-code hashes (factors/recovery-codes.service.ts), for the same reason. */
  readonly recoveryCode: Buffer;

  constructor(config: MembershipConfig) {
    const root = config.JWT_SECRET;
    if (!root) throw new Error('JWT_SECRET is not resolved');
    this.accessToken = createHmac('sha256', root).update('membership:access-token:v1').digest('base64url');
    this.verificationCode = createHmac('sha256', root).update('membership:verification-code:v1').digest();
    this.recoveryCode = createHmac('sha256', root).update('membership:recovery-code:v1').digest();
  }
}
