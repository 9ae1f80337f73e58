/** Who is calling: a member (JWT), an API key, or the gateway admin token. */
export interface Principal {
  id: string;
  kind: 'member' | 'api-key' | 'admin';
  roles: string[];
  claims?: Record<string, any>;
}

/** Each app provides one; the global guard asks it who the caller is. */
export interface Authenticator {
  /** Resolves the caller, or null when the request carries no valid credentials. May throw a 401/403 itself. */
  authenticate(req: any): Promise<Principal | null>;
}

export const AUTHENTICATOR = Symbol('AUTHENTICATOR');
