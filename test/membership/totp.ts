import { Secret, TOTP } from 'otpauth';
import { FakeClock } from '../support/clock';

/** The RFC 6238 step of the authenticator-app factor (factors/totp.service.ts). */
export const TOTP_STEP_MS = 30_000;

/** A FakeClock 10 s into a TOTP step, so the current step cannot change under a test that does not move it. */
export function midStepClock(): FakeClock {
  return new FakeClock(Math.floor(Date.now() / TOTP_STEP_MS) * TOTP_STEP_MS + 10_000);
}

/** The code an authenticator app shows for `secret` (base32) at `at` ms. */
export function totpCode(secret: string, at: number): string {
  return new TOTP({ secret: Secret.fromBase32(secret), digits: 6, period: 30, algorithm: 'SHA1' }).generate({
    timestamp: at,
  });
}

/** Another 6-digit code than `code` (its first digit changed). */
export function otherCode(code: string): string {
  return `${(Number(code[0]) + 1) % 10}${code.slice(1)}`;
}
