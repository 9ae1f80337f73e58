import { isIPv4 } from 'net';
import { normalizeIp } from '@nestjs/throttler';

/** IPv6 prefix length that one per-address limit covers when RATE_LIMIT_IPV6_PREFIX is not set. */
export const DEFAULT_IPV6_LIMIT_PREFIX = 64;

/**
 * The key every per-address limit counts under (throttler, refused credentials, login locks, code
 * sends): IPv4 as is, IPv4-mapped IPv6 as its IPv4, any other IPv6 as its network of `ipv6Prefix` bits
 * (`2001:db8:1:2::/64`), because one subscriber usually gets a whole /64 and can rotate through it.
 * @nestjs/throttler's own normalizer does the parsing, so the throttler and the other limits agree.
 */
export function addressLimitKey(
  address: string | undefined | null,
  ipv6Prefix: number = DEFAULT_IPV6_LIMIT_PREFIX,
): string {
  if (!address) return 'unknown';
  return normalizeIp(address, ipv6Prefix) || 'unknown';
}

/** The limit key of a request's client address (Express's `req.ip`, which honours TRUST_PROXY). */
export function clientLimitKey(req: { ip?: string; socket?: { remoteAddress?: string } }, ipv6Prefix?: number): string {
  return addressLimitKey(req.ip || req.socket?.remoteAddress, ipv6Prefix);
}

/**
 * The wider network of a client address, for a shared budget that one caller rotating through its
 * addresses must not spend alone: IPv4 by its /24, IPv6 by its /48 (one site's allocation; a subscriber
 * may hold a /56 or a whole /48, far more than the /64 addressLimitKey counts by).
 */
export function networkLimitKey(address: string | undefined | null): string {
  const key = addressLimitKey(address, 48);
  return isIPv4(key) ? `${key.slice(0, key.lastIndexOf('.'))}.0/24` : key;
}
