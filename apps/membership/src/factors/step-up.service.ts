import { Injectable } from '@nestjs/common';
import { BusinessException, ErrorCode, msg } from '@app/envelope';
import { Clock } from '@app/platform';
import { MembershipConfig } from '../config/membership.config';
import { SessionsService } from '../sessions/sessions.service';
import { combineAmr, FactorMethod, FactorStrength } from './factor-strength';
import { SecondFactorsService, ShownFactor } from './second-factors.service';

export interface StepUpStatus {
  /** The factor a step-up must show: null for a member without any. */
  required: 'totp' | 'passkey' | null;
  /** Until when the session counts as stepped up, or null. */
  satisfiedUntil: Date | null;
}

/**
 * Step-up: a sensitive change (password, factors, recovery codes, unlinking an identity) needs the
 * session to have shown the member's strongest factor within STEP_UP_MAX_AGE_MS, at sign-in or by
 * POST /api/v1/app/auth/step-up. Members without a factor are not asked (they have nothing to show;
 * their changes keep today's checks, such as the old password).
 */
@Injectable()
export class StepUpService {
  constructor(
    private readonly factors: SecondFactorsService,
    private readonly sessions: SessionsService,
    private readonly config: MembershipConfig,
    private readonly clock: Clock,
  ) {}

  async status(memberId: string, sessionId: string): Promise<StepUpStatus> {
    const factors = await this.factors.of(memberId);
    const required = requiredOf(factors.strength);
    if (!required) return { required, satisfiedUntil: null };
    const state = await this.sessions.factorState(sessionId, memberId);
    if (!state?.factorTime || state.factorStrength < factors.strength) return { required, satisfiedUntil: null };
    const until = state.factorTime.getTime() + this.config.STEP_UP_MAX_AGE_MS;
    return { required, satisfiedUntil: until > this.clock.now() ? new Date(until) : null };
  }

  /** Throws 10010 (data: the factor required and the methods that satisfy it) unless the session is stepped up. */
  async assert(memberId: string, sessionId: string | undefined): Promise<void> {
    const status = await this.status(memberId, sessionId ?? '');
    if (!status.required || status.satisfiedUntil) return;
    const methods: FactorMethod[] =
      status.required === 'passkey' ? ['passkey', 'recovery_code'] : ['totp', 'passkey', 'recovery_code'];
    throw new BusinessException(
      ErrorCode.STEP_UP_REQUIRED,
      msg('factors.stepUpRequired', { required: msg(`factors.kind.${status.required}`) }),
      {
        details: { required: status.required, methods },
      },
    );
  }

  /** Records a factor just shown in the session; the session's new amr, or null when the session is not live. */
  async record(memberId: string, sessionId: string, shown: ShownFactor): Promise<string[] | null> {
    const state = await this.sessions.factorState(sessionId, memberId);
    if (!state) return null;
    const amr = combineAmr(...state.amr, shown.amr);
    return (await this.sessions.recordFactor(sessionId, memberId, amr, shown.strength)) ? amr : null;
  }
}

function requiredOf(strength: FactorStrength): StepUpStatus['required'] {
  return strength === FactorStrength.PASSKEY ? 'passkey' : strength === FactorStrength.TOTP ? 'totp' : null;
}
