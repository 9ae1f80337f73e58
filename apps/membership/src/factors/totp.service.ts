import { Injectable } from '@nestjs/common';
import { Secret, TOTP } from 'otpauth';
import { toDataURL } from 'qrcode';
import { BusinessException, ErrorCode, msg } from '@app/envelope';
import { Clock } from '@app/platform';
import type { FactorChangeRecord } from './factor-change';
import { FactorCipher } from './factor-cipher';
import { FactorsRepository } from './factors.repository';

/** RFC 6238 parameters every authenticator app understands. */
const PERIOD_SECONDS = 30;
const DIGITS = 6;
/** Codes of the step before and after the current one are accepted (clock drift of the phone). */
const SKEW_STEPS = 1;

export interface TotpEnrolment {
  secret: string;
  otpauthUri: string;
  qrDataUrl: string;
}

/**
 * The authenticator-app factor: a pending secret (enrol), confirmed by a first code, then codes
 * accepted once each (the last used time step is kept in PostgreSQL, FactorsRepository.useTotpStep).
 */
@Injectable()
export class TotpService {
  constructor(
    private readonly factors: FactorsRepository,
    private readonly cipher: FactorCipher,
    private readonly clock: Clock,
  ) {}

  async begin(memberId: string, account: string, issuer: string): Promise<TotpEnrolment> {
    const secret = new Secret({ size: 20 });
    if (!(await this.factors.savePendingTotp(memberId, this.cipher.seal(secret.base32, context(memberId))))) {
      throw new BusinessException(ErrorCode.CONFLICT, msg('factors.totpAlreadyEnabled'));
    }
    const otpauthUri = totpOf(secret.base32, issuer, account).toString();
    return {
      secret: secret.base32,
      otpauthUri,
      qrDataUrl: await toDataURL(otpauthUri, { errorCorrectionLevel: 'M', margin: 2, width: 240 }),
    };
  }

  /** Confirms the pending secret with its first code; 10011 for a wrong code, 409 when nothing is pending. */
  async confirm(memberId: string, code: string, record: FactorChangeRecord): Promise<void> {
    const row = await this.factors.totp(memberId);
    if (!row || row.confirmedTime) throw new BusinessException(ErrorCode.CONFLICT, msg('factors.totpNothingPending'));
    const step = this.matchingStep(row.secretSealed, memberId, code);
    if (step === null) throw new BusinessException(ErrorCode.SECOND_FACTOR_INVALID, msg('factors.codeInvalid'));
    if (!(await this.factors.confirmTotp(memberId, row.secretSealed, step, new Date(this.clock.now()), record))) {
      throw new BusinessException(ErrorCode.CONFLICT, msg('factors.totpNothingPending'));
    }
  }

  /** Whether `code` is a valid, not yet used code of the member's confirmed secret; a true answer uses it up. */
  async verify(memberId: string, code: string): Promise<boolean> {
    const row = await this.factors.totp(memberId);
    if (!row?.confirmedTime) return false;
    const step = this.matchingStep(row.secretSealed, memberId, code);
    return step !== null && step > row.lastStep && (await this.factors.useTotpStep(memberId, step));
  }

  async disable(memberId: string, record: FactorChangeRecord): Promise<boolean> {
    return this.factors.deleteTotp(memberId, record);
  }

  /** The time step whose code `code` is (current ±SKEW_STEPS), or null. */
  private matchingStep(sealed: string, memberId: string, code: string): number | null {
    const secret = this.cipher.open(sealed, context(memberId));
    if (!secret || !/^\d{6}$/.test(code)) return null;
    const now = this.clock.now();
    const delta = totpOf(secret).validate({ token: code, timestamp: now, window: SKEW_STEPS });
    return delta === null ? null : Math.floor(now / 1000 / PERIOD_SECONDS) + delta;
  }
}

function totpOf(base32: string, issuer = '', label = ''): TOTP {
  return new TOTP({
    issuer,
    label,
    algorithm: 'SHA1',
    digits: DIGITS,
    period: PERIOD_SECONDS,
    secret: Secret.fromBase32(base32),
  });
}

/** The member id is the sealed secret's associated data: a secret copied to another member's row does not open. */
function context(memberId: string): string {
  return `totp:${memberId}`;
}
