import { createHash, randomBytes } from 'node:crypto';
import { ExternalProfile } from '../../identities/external-profile';
import { OAuth2ClientRegistration } from '../clients/oauth2-client-registration';
import { AuthorizationState } from '../oauth2-state.repository';

/** The third party refused or failed; the browser goes back to the frontend with `?error=`. */
export class ProviderAuthorizationFailed extends Error {
  constructor(
    /** OAuth error code shown to the frontend (`access_denied`, `invalid_grant`, `server_error`, ...). */
    readonly error: string,
    readonly description: string,
  ) {
    super(`${error}: ${description}`);
  }
}

export interface AuthorizationRequest {
  state: string;
  callbackUrl: string;
  codeChallenge?: string;
  nonce?: string;
  /** WeChat only: snsapi_login, snsapi_userinfo or snsapi_base. */
  scope?: string;
}

/** One way of talking to a kind of provider (standard OAuth 2.0, OIDC, WeChat). */
export interface ProviderFlow {
  authorizationUrl(reg: OAuth2ClientRegistration, request: AuthorizationRequest): Promise<string>;
  /** Exchanges the code of the callback query and reads who the user is. */
  complete(
    reg: OAuth2ClientRegistration,
    query: Record<string, string>,
    stored: AuthorizationState,
  ): Promise<ExternalProfile>;
}

export function pkcePair(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}
