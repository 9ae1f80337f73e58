import { Injectable } from '@nestjs/common';
import { createHmac, randomInt } from 'crypto';
import { Clock } from '@app/platform';
import { TokenSecrets } from '../security/token-secrets';
import type { FactorChangeRecord } from './factor-change';
import { FactorsRepository } from './factors.repository';

export const RECOVERY_CODE_COUNT = 10;
/** No 0/o, 1/l/i: a code read off paper is typed right. 31 symbols, 10 per code: about 50 bits. */
const ALPHABET = 'abcdefghjkmnpqrstuvwxyz23456789';

/** Single-use recovery codes, kept as keyed hashes; shown once when made. */
@Injectable()
export class RecoveryCodesService {
  constructor(
    private readonly factors: FactorsRepository,
    private readonly secrets: TokenSecrets,
    private readonly clock: Clock,
  ) {}

  /**
   * Makes RECOVERY_CODE_COUNT new codes (the old ones stop working) and returns them, formatted xxxx-xxxx-xx.
   * `record` when the member asked for them (not when they come with a first factor, recorded with it).
   */
  async regenerate(memberId: string, record?: FactorChangeRecord): Promise<string[]> {
    const codes = Array.from({ length: RECOVERY_CODE_COUNT }, () => newCode());
    await this.factors.replaceRecoveryCodes(
      memberId,
      codes.map((c) => this.hash(memberId, c)),
      record,
    );
    return codes;
  }

  /** Uses a code (case, spaces and dashes ignored); the codes left, or null when it is not an unused code of the member. */
  async use(memberId: string, code: string): Promise<number | null> {
    const normalized = normalize(code);
    if (normalized.length !== 10) return null;
    return this.factors.useRecoveryCode(memberId, this.hash(memberId, normalized), new Date(this.clock.now()));
  }

  private hash(memberId: string, code: string): string {
    return createHmac('sha256', this.secrets.recoveryCode)
      .update(`${memberId}:${normalize(code)}`)
      .digest('hex');
  }
}

function newCode(): string {
  const chars = Array.from({ length: 10 }, () => ALPHABET[randomInt(ALPHABET.length)]).join('');
  return `${chars.slice(0, 4)}-${chars.slice(4, 8)}-${chars.slice(8)}`;
}

function normalize(code: string): string {
  return code.toLowerCase().replace(/[\s-]/g, '');
}
