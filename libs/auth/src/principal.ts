import type { Request } from 'express';

/** Who is calling: a member (JWT), an API key, or the gateway admin token. */
export interface Principal {
  id: string;
  kind: 'member' | 'api-key' | 'admin';
  roles: string[];
  /** The credential's own claims; each app reads them as its claims type. */
  claims?: object;
  /**
   * Whose turn the caller takes in what a replica shares out between callers (the body bytes being read:
   * body-budget.ts in libs/platform): the tenant of a credential that shares with others (the gateway: a key's
   * project); unset, the principal's own id.
   */
  share?: string;
}

/** Each app provides one; the global guard asks it who the caller is. */
export interface Authenticator {
  /** Resolves the caller, or null when the request carries no valid credentials. May throw a 401/403 itself. */
  authenticate(req: Request): Promise<Principal | null>;
}

export const AUTHENTICATOR = Symbol('AUTHENTICATOR');

const knownCallers = new WeakSet<object>();

/**
 * Marks a request whose credential an authenticator accepted before a later check of the same
 * authentication refused it (the gateway: a valid key over its requests_per_minute). Its refusal may
 * keep the connection open: the caller is not a stranger, so its small body may be read off the wire
 * (see authenticate-first.ts).
 */
export function markKnownCaller(req: object): void {
  knownCallers.add(req);
}

export function isKnownCaller(req: object): boolean {
  return knownCallers.has(req);
}

const holds = new WeakMap<object, () => Promise<void>>();

/**
 * Marks a refusal of credentials to be answered after `hold` (the gateway's AI_REFUSAL_HOLD_MS). The wait
 * starts once the refusal is counted against the client's address (authenticateRequest), so a caller
 * guessing many keys at once is blocked by its count, not let through during the wait.
 */
export function answerAfter<E extends object>(error: E, hold: () => Promise<void>): E {
  holds.set(error, hold);
  return error;
}

/** The wait `answerAfter` gave a refusal, if any. */
export function holdOf(error: unknown): (() => Promise<void>) | undefined {
  return typeof error === 'object' && error !== null ? holds.get(error) : undefined;
}

/** What the limiter reads of a caller: its address (an HTTP request, or a WebSocket's handshake). */
export interface LimitedCaller {
  ip?: string;
  socket?: { remoteAddress?: string };
}

/** Where the limiter may set Retry-After: the HTTP response, when there is one. */
export interface LimitedResponse {
  headersSent?: boolean;
  setHeader?(name: string, value: string): unknown;
}

/**
 * Optional limits around authentication, provided by the platform: strangers are counted per client
 * address (missing or wrong credentials), authenticated callers per principal.
 */
export interface AuthLimiter {
  /** Before credentials are checked: throws (429) while this client address is blocked for failed attempts. */
  before(req: LimitedCaller, res: LimitedResponse | null): void;
  /** Credentials missing or refused: counts it per client address; throws 429 once over the limit. */
  failed(req: LimitedCaller, res: LimitedResponse | null): Promise<void>;
  /** Authenticated: the caller's own limit (members per member; API keys count their own rate); throws 429 when over. */
  succeeded(req: LimitedCaller, res: LimitedResponse | null, principal: Principal): Promise<void>;
}

export const AUTH_LIMITER = Symbol('AUTH_LIMITER');
