import type { Principal } from '@app/auth';

/** The session id (`sid`) in a member principal's access-token claims, if there is one. */
export function sessionIdOf(principal: Principal): string | undefined {
  const sid = (principal.claims as { sid?: unknown } | undefined)?.sid;
  return typeof sid === 'string' ? sid : undefined;
}
