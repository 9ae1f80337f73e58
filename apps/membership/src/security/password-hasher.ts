import { Injectable } from '@nestjs/common';
import * as argon2 from 'argon2';
import * as bcrypt from 'bcryptjs';

/** OWASP Password Storage Cheat Sheet: argon2id, m=19 MiB, t=2, p=1. */
export const ARGON2_OPTIONS = { type: argon2.argon2id, memoryCost: 19_456, timeCost: 2, parallelism: 1 } as const;

const BCRYPT_PREFIX = /^\$2[abxy]\$\d\d\$/;

export interface PasswordCheck {
  ok: boolean;
  /** The stored hash is bcrypt (imported) or weaker argon2 parameters: store a fresh hash now. */
  needsRehash: boolean;
}

/** Hashes with argon2id; also verifies bcrypt hashes imported from the old Java system. */
@Injectable()
export class PasswordHasher {
  // Verified when no account matches, so unknown accounts cost the same time as wrong passwords.
  private dummyHash?: Promise<string>;

  hash(password: string): Promise<string> {
    return argon2.hash(password, ARGON2_OPTIONS);
  }

  async verify(stored: string | null | undefined, password: string): Promise<PasswordCheck> {
    if (!stored) {
      await this.burn(password);
      return { ok: false, needsRehash: false };
    }
    if (BCRYPT_PREFIX.test(stored)) {
      const ok = await bcrypt.compare(password, stored.replace(/^\$2y\$/, '$2b$'));
      return { ok, needsRehash: ok };
    }
    if (stored.startsWith('$argon2')) {
      let ok = false;
      try {
        ok = await argon2.verify(stored, password);
      } catch {
        ok = false;
      }
      return { ok, needsRehash: ok && argon2.needsRehash(stored, ARGON2_OPTIONS) };
    }
    await this.burn(password);
    return { ok: false, needsRehash: false };
  }

  /** Spends the time of one real verification and always fails. */
  async burn(password: string): Promise<void> {
    this.dummyHash ??= argon2.hash('dummy-password-for-unknown-accounts', ARGON2_OPTIONS);
    await argon2.verify(await this.dummyHash, password).catch(() => false);
  }
}
