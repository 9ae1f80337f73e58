import { Injectable } from '@nestjs/common';
import type { AuthenticationResponseJSON } from '@simplewebauthn/server';
import { BusinessException, ErrorCode, Locale, msg } from '@app/envelope';
import { SharedState } from '@app/platform';
import { MembershipConfig } from '../config/membership.config';
import { Member } from '../members/member.entity';
import { FactorNotices } from './factor-notices';
import { amrOf, FactorMethod, FactorStrength, strengthOf } from './factor-strength';
import { FactorsRepository, FactorSummary } from './factors.repository';
import { MemberAssertionPurpose, PasskeysService } from './passkeys.service';
import { RecoveryCodesService } from './recovery-codes.service';
import { TotpService } from './totp.service';

/** An answer to a second-factor question (sign-in challenge or step-up). */
export interface FactorAnswer {
  method: FactorMethod;
  code?: string;
  credential?: AuthenticationResponseJSON;
}

/** A factor that was shown: its amr value and strength. */
export interface ShownFactor {
  amr: string;
  strength: FactorStrength;
}

export interface MemberFactors extends FactorSummary {
  /** What the member can answer a challenge with. */
  methods: FactorMethod[];
  /** The member's strongest factor (NONE: no factor). */
  strength: FactorStrength;
}

/**
 * Checks a member's second factor, whatever it is, under one abuse limit: MFA_MEMBER_MAX_FAILURES
 * wrong answers per member within MFA_LOCK_MS (shared state, so every replica counts the same) lock
 * the member's second-factor checks for the rest of that window.
 */
@Injectable()
export class SecondFactorsService {
  constructor(
    private readonly factors: FactorsRepository,
    private readonly totp: TotpService,
    private readonly recovery: RecoveryCodesService,
    private readonly passkeys: PasskeysService,
    private readonly notices: FactorNotices,
    private readonly state: SharedState,
    private readonly config: MembershipConfig,
  ) {}

  async of(memberId: string): Promise<MemberFactors> {
    const s = await this.factors.summary(memberId);
    const methods: FactorMethod[] = [];
    if (s.totp) methods.push('totp');
    if (s.passkeys > 0) methods.push('passkey');
    const strength = s.passkeys > 0 ? FactorStrength.PASSKEY : s.totp ? FactorStrength.TOTP : FactorStrength.NONE;
    if (strength !== FactorStrength.NONE && s.recoveryCodes > 0) methods.push('recovery_code');
    return { ...s, methods, strength };
  }

  /**
   * Checks the answer; throws 10011 when wrong or missing the method's code or credential (counted
   * towards the lock), 10008 while locked. A recovery code used is announced to the member.
   */
  async check(
    member: Member,
    answer: FactorAnswer,
    passkeyPurpose: MemberAssertionPurpose,
    locale: Locale,
  ): Promise<ShownFactor> {
    await this.assertNotLocked(member.id);
    const shown = await this.verify(member, answer, passkeyPurpose, locale);
    if (!shown) {
      const { count, ttlMs } = await this.state.incr(this.failuresKey(member.id), this.config.MFA_LOCK_MS);
      if (count >= this.config.MFA_MEMBER_MAX_FAILURES) {
        throw new BusinessException(ErrorCode.ACCOUNT_LOCKED, msg('factors.locked'), {
          retryAfterSeconds: Math.max(1, Math.ceil(ttlMs / 1000)),
        });
      }
      throw new BusinessException(
        ErrorCode.SECOND_FACTOR_INVALID,
        answer.method === 'passkey' ? msg('factors.passkeyInvalid') : msg('factors.codeInvalid'),
      );
    }
    return shown;
  }

  private async verify(
    member: Member,
    answer: FactorAnswer,
    purpose: MemberAssertionPurpose,
    locale: Locale,
  ): Promise<ShownFactor | null> {
    if (answer.method === 'totp')
      return (await this.totp.verify(member.id, answer.code ?? ''))
        ? { amr: amrOf('totp'), strength: strengthOf('totp') }
        : null;
    if (answer.method === 'recovery_code') {
      const left = await this.recovery.use(member.id, answer.code ?? '');
      if (left === null) return null;
      await this.notices.announce(member, 'notice.recoveryCodeUsed', locale, { remaining: left });
      return { amr: amrOf('recovery_code'), strength: strengthOf('recovery_code') };
    }
    if (!answer.credential) return null;
    const verified = await this.passkeys.verifyAssertion(answer.credential, purpose);
    return verified ? { amr: amrOf('passkey', verified.backedUp), strength: strengthOf('passkey') } : null;
  }

  private async assertNotLocked(memberId: string): Promise<void> {
    const raw = await this.state.get(this.failuresKey(memberId));
    if (raw !== null && Number(raw) >= this.config.MFA_MEMBER_MAX_FAILURES) {
      const ttl = await this.state.ttl(this.failuresKey(memberId));
      throw new BusinessException(ErrorCode.ACCOUNT_LOCKED, msg('factors.locked'), {
        retryAfterSeconds: Math.max(1, Math.ceil(ttl / 1000)),
      });
    }
  }

  private failuresKey(memberId: string): string {
    return `mfa:fail:${memberId}`;
  }
}
