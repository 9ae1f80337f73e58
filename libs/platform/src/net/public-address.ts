import { Resolver as DnsResolver } from 'dns/promises';
import { BlockList, isIP, type LookupFunction } from 'net';
import * as ipaddr from 'ipaddr.js';

/**
 * The public-address guard of every outbound request a caller chooses the target of: image URLs
 * (apps/ai-gateway/src/vision/image-source.ts) and webhook deliveries (libs/webhooks). A name is resolved
 * once, every answer must be public (or inside an allowlisted CIDR), and the connection is pinned to
 * the addresses vetted, so a second DNS answer cannot swap in a private one.
 */
export type Resolver = (hostname: string, signal?: AbortSignal) => Promise<Array<{ address: string; family: number }>>;

/** How long one DNS query of a caller-chosen name may take on its first try (c-ares doubles it on the next). */
export const DNS_QUERY_TIMEOUT_MS = 1000;
/**
 * Tries per query and name server: one that never answers ends a lookup after about 1 + 2 seconds (c-ares tries
 * each name server of resolv.conf in turn, so three silent ones take about three times that); the fetch's or
 * delivery's own deadline ends the wait sooner.
 */
export const DNS_QUERY_TRIES = 2;

/** What `localhost` names are: IPv4's loopback, as getaddrinfo answers it on most hosts (an allowlist of 127.0.0.1/32 takes it). */
const LOOPBACK = [{ address: '127.0.0.1', family: 4 }];

/**
 * The resolver of caller-chosen host names: DNS queries (A and AAAA) on c-ares, with a deadline of their own.
 * Not `dns.lookup`: getaddrinfo runs on libuv's threadpool (four threads, shared with zlib, fs and the
 * password hasher), where a lookup waiting on a slow name server a caller chose holds a thread for the
 * system resolver's whole timeout; c-ares waits on a socket and holds none. So names come from DNS only:
 * no hosts file and no search domains; `localhost` and `*.localhost` are loopback without a query
 * (RFC 6761), and refused as such unless an allowlisted CIDR covers them. A lookup whose caller's
 * signal ends stops waiting at once (c-ares drops the query at its own timeout).
 */
export function dnsResolver(
  options: { servers?: string[]; timeoutMs?: number; tries?: number } = {},
): Resolver & { cancel(): void } {
  const resolver = new DnsResolver({
    timeout: options.timeoutMs ?? DNS_QUERY_TIMEOUT_MS,
    tries: options.tries ?? DNS_QUERY_TRIES,
  });
  if (options.servers) resolver.setServers(options.servers);
  const resolve: Resolver = async (hostname, signal) => {
    const name = hostname.toLowerCase().replace(/\.$/, '');
    if (name === 'localhost' || name.endsWith('.localhost')) return LOOPBACK;
    const [v4, v6] = await untilAborted(Promise.allSettled([resolver.resolve4(name), resolver.resolve6(name)]), signal);
    const found = [
      ...(v4.status === 'fulfilled' ? v4.value.map((address) => ({ address, family: 4 })) : []),
      ...(v6.status === 'fulfilled' ? v6.value.map((address) => ({ address, family: 6 })) : []),
    ];
    if (!found.length) throw new Error(`${name} did not resolve`);
    return found;
  };
  // Ends every query still waiting (each then refuses its name): for a shutdown, or a test's end.
  return Object.assign(resolve, { cancel: () => resolver.cancel() });
}

function untilAborted<T>(work: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return work;
  if (signal.aborted) return Promise.reject(new Error('aborted'));
  return new Promise<T>((resolve, reject) => {
    const stop = () => reject(new Error('aborted'));
    signal.addEventListener('abort', stop, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', stop));
  });
}

let systemResolver: Resolver | undefined;
/** One c-ares channel per process, on the system's name servers (/etc/resolv.conf), made at first use. */
const defaultResolver: Resolver = (hostname, signal) => (systemResolver ??= dnsResolver())(hostname, signal);

// Every entry of the IANA IPv4 and IPv6 Special-Purpose Address Registries (as of 2026), whether
// "globally reachable" or not (no public image lives on AS112, AMT, PCP or TURN anycast either), plus
// multicast, the reserved 240/4 and broadcast. ipaddr.js's own range() must also say "unicast": a
// second, independently kept table.
const V4_SPECIAL = [
  '0.0.0.0/8',
  '10.0.0.0/8',
  '100.64.0.0/10',
  '127.0.0.0/8',
  '169.254.0.0/16',
  '172.16.0.0/12',
  '192.0.0.0/24',
  '192.0.2.0/24',
  '192.31.196.0/24',
  '192.52.193.0/24',
  '192.88.99.0/24',
  '192.168.0.0/16',
  '192.175.48.0/24',
  '198.18.0.0/15',
  '198.51.100.0/24',
  '203.0.113.0/24',
  '224.0.0.0/4',
  '240.0.0.0/4',
  '255.255.255.255/32',
].map((c) => ipaddr.IPv4.parseCIDR(c));
const V6_SPECIAL = [
  '::/128',
  '::1/128',
  '::/96',
  '::ffff:0:0/96',
  '::ffff:0:0:0/96',
  '64:ff9b::/96',
  '64:ff9b:1::/48',
  '100::/64',
  '100:0:0:1::/64',
  '2001::/23',
  '2001::/32',
  '2001:db8::/32',
  '2002::/16',
  '2620:4f:8000::/48',
  '3fff::/20',
  '5f00::/16',
  'fc00::/7',
  'fe80::/10',
  'fec0::/10',
  'ff00::/8',
].map((c) => ipaddr.IPv6.parseCIDR(c));
/** The only IPv6 space allocated for global unicast; anything outside it is refused outright. */
const V6_GLOBAL_UNICAST = ipaddr.IPv6.parseCIDR('2000::/3');
const V4_MAPPED = ipaddr.IPv6.parseCIDR('::ffff:0:0/96');
const NAT64_WELL_KNOWN = ipaddr.IPv6.parseCIDR('64:ff9b::/96');

function lastIpv4(v6: ipaddr.IPv6): ipaddr.IPv4 {
  const [hi, lo] = v6.parts.slice(6);
  return new ipaddr.IPv4([hi >> 8, hi & 255, lo >> 8, lo & 255]);
}

/**
 * Whether the gateway must not connect to `address` (an IP literal). IPv4-mapped (::ffff:a.b.c.d)
 * and well-known NAT64 (64:ff9b::a.b.c.d, what DNS64 hands an IPv6-only host for an IPv4-only site)
 * are judged by the IPv4 address they carry; every other embedded-IPv4 form (IPv4-compatible ::/96,
 * IPv4-translated ::ffff:0:0:0/96, local-use NAT64 64:ff9b:1::/48, 6to4 2002::/16, Teredo 2001::/32)
 * is refused outright, as is every special-purpose range and all IPv6 outside 2000::/3.
 * Unparseable text is refused.
 */
export function isForbiddenAddress(address: string, allowed?: BlockList): boolean {
  const family = isIP(address);
  if (family === 0) return true;
  let parsed: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    // ipaddr.js reads any dotted tail as IPv4-mapped ("::8.8.8.8" becomes ::ffff:808:808), so the text
    // goes through the WHATWG URL serializer first: all-hex groups, zone id dropped.
    parsed = ipaddr.parse(family === 6 ? new URL(`http://[${address.split('%')[0]}]/`).hostname.slice(1, -1) : address);
  } catch {
    return true;
  }
  if (allowed?.check(address, family === 4 ? 'ipv4' : 'ipv6')) return false;
  if (parsed.kind() === 'ipv6') {
    const v6 = parsed as ipaddr.IPv6;
    if (v6.match(V4_MAPPED) || v6.match(NAT64_WELL_KNOWN)) return isForbiddenAddress(lastIpv4(v6).toString(), allowed);
    if (!v6.match(V6_GLOBAL_UNICAST)) return true;
    if (V6_SPECIAL.some((range) => v6.match(range))) return true;
    return v6.range() !== 'unicast';
  }
  const v4 = parsed as ipaddr.IPv4;
  if (V4_SPECIAL.some((range) => v4.match(range))) return true;
  return v4.range() !== 'unicast';
}

export function addressAllowList(cidrs: string[] = []): BlockList | undefined {
  if (!cidrs.length) return undefined;
  const list = new BlockList();
  for (const cidr of cidrs) {
    const [net, bits] = cidr.trim().split('/');
    const family = isIP(net);
    if (!family) continue;
    list.addSubnet(net, Number(bits ?? (family === 4 ? 32 : 128)), family === 4 ? 'ipv4' : 'ipv6');
  }
  return list;
}

/** Why a host was refused: a private or special address (`forbidden`), or a name that did not resolve (`unresolvable`). */
export class AddressRefused extends Error {
  constructor(readonly reason: 'forbidden' | 'unresolvable') {
    super(reason === 'forbidden' ? 'the address is not public' : 'the name did not resolve');
  }
}

/** The vetted addresses of a URL's host; throws AddressRefused. */
export async function publicAddressesOf(
  url: URL,
  options: { allowed?: BlockList; resolve?: Resolver; signal?: AbortSignal },
): Promise<Array<{ address: string; family: number }>> {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (isIP(host)) {
    if (isForbiddenAddress(host, options.allowed)) throw new AddressRefused('forbidden');
    return [{ address: host, family: isIP(host) }];
  }
  let addresses: Array<{ address: string; family: number }>;
  try {
    addresses = await (options.resolve ?? defaultResolver)(host, options.signal);
  } catch {
    throw new AddressRefused('unresolvable');
  }
  if (!addresses.length) throw new AddressRefused('unresolvable');
  // Any private answer refuses the whole name: the connection could land on it.
  if (addresses.some((a) => isForbiddenAddress(a.address, options.allowed))) throw new AddressRefused('forbidden');
  return addresses;
}

/** A `lookup` for an undici Agent that answers the vetted addresses only. */
export function pinnedLookup(addresses: Array<{ address: string; family: number }>): LookupFunction {
  return (_hostname, options, callback) => {
    if (options?.all) callback(null, addresses);
    else callback(null, addresses[0].address, addresses[0].family);
  };
}
