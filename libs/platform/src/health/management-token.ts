import { createHash, timingSafeEqual } from 'crypto';
import type { IncomingMessage } from 'http';

/**
 * Whether a request may see management data (Prometheus metrics, health details): always when
 * MANAGEMENT_TOKEN is unset (then keep /actuator/* off public ingress), else only with
 * `Authorization: Bearer <MANAGEMENT_TOKEN>`. Compared as SHA-256 digests in constant time.
 */
export function managementAllowed(req: Pick<IncomingMessage, 'headers'>, token: string | undefined): boolean {
  if (!token) return true;
  const header = req.headers.authorization;
  if (typeof header !== 'string' || !/^Bearer /i.test(header)) return false;
  const digest = (s: string) => createHash('sha256').update(s).digest();
  return timingSafeEqual(digest(header.slice(7).trim()), digest(token));
}
