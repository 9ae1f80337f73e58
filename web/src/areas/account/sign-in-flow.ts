import { signedIn } from '../../api/session';
import { MfaChallenge, needsSecondFactor, SignInResult } from '../../api/types';
import { Area, navigate } from '../../router';

/** Where a completed sign-in lands in each area (both areas share these sign-in pages). */
export const AREA_HOME: Record<Area, string> = { account: '/security', console: '/' };

/**
 * The second-factor challenge of a sign-in in progress. Kept in memory only: it is short-lived and single
 * use (a reload starts the sign-in again).
 */
let pending: MfaChallenge | null = null;
export const pendingChallenge = (): MfaChallenge | null => pending;
export const clearChallenge = (): void => void (pending = null);

/** After a sign-in step: tokens → the area's home (the security page, the console's overview); a challenge → the second-factor page. */
export function finishSignIn(result: SignInResult, area: Area = 'account'): void {
  if (needsSecondFactor(result)) {
    pending = result;
    navigate(area, '/sign-in/second-factor');
    return;
  }
  pending = null;
  signedIn(result);
  navigate(area, AREA_HOME[area], { replace: true });
}
