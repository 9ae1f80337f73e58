import { signedIn } from '../../api/session';
import { MfaChallenge, needsSecondFactor, SignInResult } from '../../api/types';
import { navigate } from '../../router';

/**
 * The second-factor challenge of a sign-in in progress. Kept in memory only: it is short-lived and single
 * use (a reload starts the sign-in again).
 */
let pending: MfaChallenge | null = null;
export const pendingChallenge = (): MfaChallenge | null => pending;
export const clearChallenge = (): void => void (pending = null);

/** After a sign-in step: tokens → the security page; a challenge → the second-factor page. */
export function finishSignIn(result: SignInResult): void {
  if (needsSecondFactor(result)) {
    pending = result;
    navigate('account', '/sign-in/second-factor');
    return;
  }
  pending = null;
  signedIn(result);
  navigate('account', '/security', { replace: true });
}
