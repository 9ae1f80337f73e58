import { Injectable } from '@nestjs/common';
import { createHash, randomBytes } from 'crypto';
import { BusinessException, ErrorCode, msg } from '@app/envelope';
import { SharedState } from '@app/platform';
import { MembershipConfig } from '../config/membership.config';

/** A sign-in waiting for its second factor (or, `enrol`, for the member to enrol one). */
export interface PendingSignIn {
  memberId: string;
  loginType: string;
  /** amr of the first factor (pwd, sms, oauth). */
  firstAmr: string;
  /** For a password sign-in, the hash checked: the session opens only while it is still stored (auth/login.service.ts). */
  passwordHash?: string;
  enrol: boolean;
}

export interface OpenChallenge {
  /** Key of the challenge in shared state (the token's hash), also what a passkey challenge is bound to. */
  id: string;
  pending: PendingSignIn;
}

/**
 * Second-factor sign-in challenges (mfaToken) in shared state: MFA_CHALLENGE_TTL_MS, single use
 * (take), MFA_CHALLENGE_MAX_ATTEMPTS wrong answers. Only the token's hash is a key: the state store
 * never holds a usable token.
 */
@Injectable()
export class MfaChallenges {
  constructor(
    private readonly state: SharedState,
    private readonly config: MembershipConfig,
  ) {}

  async issue(pending: PendingSignIn): Promise<{ mfaToken: string; expiresIn: number }> {
    const mfaToken = `mfa_${randomBytes(32).toString('base64url')}`;
    const ttl = this.config.MFA_CHALLENGE_TTL_MS;
    await this.state.set(key(idOf(mfaToken)), JSON.stringify(pending), ttl);
    return { mfaToken, expiresIn: ttl };
  }

  /** The open challenge of this token, of the expected kind (answer or enrol); 10012 otherwise. */
  async open(mfaToken: string, enrol: boolean): Promise<OpenChallenge> {
    const id = idOf(mfaToken);
    const raw = await this.state.get(key(id));
    if (!raw) throw invalid();
    const pending = JSON.parse(raw) as PendingSignIn;
    if (pending.enrol !== enrol)
      throw new BusinessException(
        ErrorCode.MFA_CHALLENGE_INVALID,
        msg(enrol ? 'factors.challengeNotEnrolment' : 'factors.challengeEnrolmentOnly'),
      );
    return { id, pending };
  }

  /** Counts a wrong answer; past MFA_CHALLENGE_MAX_ATTEMPTS the challenge is void. */
  async countFailure(id: string): Promise<void> {
    const { count } = await this.state.incr(`mfa:attempts:${id}`, this.config.MFA_CHALLENGE_TTL_MS);
    if (count >= this.config.MFA_CHALLENGE_MAX_ATTEMPTS) await this.state.del(key(id));
  }

  /** Uses the challenge up; 10012 when another request used it first. */
  async take(id: string): Promise<void> {
    if ((await this.state.take(key(id))) === null) throw invalid();
  }
}

function idOf(mfaToken: string): string {
  return createHash('sha256').update(mfaToken).digest('base64url');
}

function key(id: string): string {
  return `mfa:challenge:${id}`;
}

function invalid(): BusinessException {
  return new BusinessException(ErrorCode.MFA_CHALLENGE_INVALID, msg('factors.challengeInvalid'));
}
