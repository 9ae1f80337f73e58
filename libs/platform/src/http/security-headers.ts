import helmet, { HelmetOptions } from 'helmet';
import type { IncomingMessage, ServerResponse } from 'node:http';

/** Helmet settings of both apps (Swagger UI's own assets load from this origin: inline styles, data: images). */
export const HELMET_OPTIONS: Readonly<HelmetOptions> = {
  contentSecurityPolicy: {
    directives: {
      defaultSrc: ["'self'"],
      imgSrc: ["'self'", 'data:', 'https:'],
      styleSrc: ["'self'", "'unsafe-inline'", 'https:'],
      scriptSrc: ["'self'", "'unsafe-inline'"],
    },
  },
  crossOriginResourcePolicy: { policy: 'cross-origin' },
};

/**
 * The headers helmet sets with HELMET_OPTIONS (they do not depend on the request), captured once for the
 * pipeline's edge stage, which writes them with each answer's head. Headers helmet removes
 * (X-Powered-By) are not listed.
 */
export function securityHeaders(options: HelmetOptions = HELMET_OPTIONS): ReadonlyArray<readonly [string, string]> {
  const headers: Array<[string, string]> = [];
  const res = {
    setHeader: (name: string, value: unknown) => headers.push([name, String(value)]),
    removeHeader: () => undefined,
  };
  let sync = false;
  // helmet only sets and removes headers here: the stand-ins carry just that.
  helmet(options)({} as IncomingMessage, res as unknown as ServerResponse, () => (sync = true));
  if (!sync) throw new Error('helmet did not finish synchronously');
  return headers;
}
