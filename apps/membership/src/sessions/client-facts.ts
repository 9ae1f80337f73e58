import type { AuditContext } from '@app/audit';
import type { Locale } from '@app/envelope';

/**
 * What the use cases know about the client behind a request, read once at the edge (`@Client()`,
 * sessions/client.decorator.ts) so that no service touches the request itself.
 */
export interface ClientFacts {
  /** The address under TRUST_PROXY, as sessions and lockouts record it (sessions/client-info.ts clientIp). */
  ip: string;
  /** The User-Agent header. */
  userAgent: string | undefined;
  /** "Chrome on Windows": the device a session lists (sessions/client-info.ts deviceName). */
  device: string;
  /** The language of messages (Accept-Language). */
  locale: Locale;
  /** X-Request-Id, for the rows a request leaves behind (lockout failures). */
  requestId: string | null;
  /** The request's audit facts: the principal as actor, the request id, the address. */
  audit: AuditContext;
  /** Whether the request came over https (Express's req.secure under TRUST_PROXY). */
  secure: boolean;
  /** `{protocol}://{host}` of the request, for addresses derived from it (OAuth callbacks). */
  origin: string;
  /** The Cookie header (the OAuth browser binding reads its nonce from it, oauth/browser-binding.ts). */
  cookie: string | undefined;
  /** The Sec-Fetch-Site header. */
  fetchSite: string | undefined;
}

/** The facts a new session records. */
export type SessionClient = Pick<ClientFacts, 'ip' | 'device'>;
