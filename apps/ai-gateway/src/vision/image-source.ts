import { lookup as dnsLookup } from 'dns/promises';
import { BlockList, isIP, type LookupFunction } from 'net';
import * as ipaddr from 'ipaddr.js';
import { Agent, request } from 'undici';
import { GatewayError, GatewayErrorCode } from '@app/envelope';

export type Resolver = (hostname: string) => Promise<Array<{ address: string; family: number }>>;

/** AI_MEDIA_FETCH_ALLOWED_CIDRS as a list: the addresses every image fetch of the gateway may reach besides public ones. */
export function allowedFetchCidrs(config: { AI_MEDIA_FETCH_ALLOWED_CIDRS?: string }): string[] {
  return (config.AI_MEDIA_FETCH_ALLOWED_CIDRS ?? '').split(',').map((s) => s.trim()).filter(Boolean);
}

export interface ImageSourceLimits {
  maxBytes: number;
  timeoutMs: number;
  maxRedirects: number;
  /** CIDRs exempt from the private-address block (tests, trusted internal hosts); empty in production. */
  allowedCidrs?: string[];
  /** DNS resolution; tests inject one to map names onto private addresses without any traffic. */
  resolve?: Resolver;
  /** The caller's request ended: stop downloading. */
  signal?: AbortSignal;
}

const defaultResolver: Resolver = (hostname) => dnsLookup(hostname, { all: true, verbatim: true });

// Every entry of the IANA IPv4 and IPv6 Special-Purpose Address Registries (as of 2026), whether
// "globally reachable" or not (no public image lives on AS112, AMT, PCP or TURN anycast either), plus
// multicast, the reserved 240/4 and broadcast. ipaddr.js's own range() must also say "unicast": a
// second, independently kept table.
const V4_SPECIAL = [
  '0.0.0.0/8', '10.0.0.0/8', '100.64.0.0/10', '127.0.0.0/8', '169.254.0.0/16', '172.16.0.0/12', '192.0.0.0/24',
  '192.0.2.0/24', '192.31.196.0/24', '192.52.193.0/24', '192.88.99.0/24', '192.168.0.0/16', '192.175.48.0/24',
  '198.18.0.0/15', '198.51.100.0/24', '203.0.113.0/24', '224.0.0.0/4', '240.0.0.0/4', '255.255.255.255/32',
].map((c) => ipaddr.IPv4.parseCIDR(c));
const V6_SPECIAL = [
  '::/128', '::1/128', '::/96', '::ffff:0:0/96', '::ffff:0:0:0/96', '64:ff9b::/96', '64:ff9b:1::/48', '100::/64',
  '100:0:0:1::/64', '2001::/23', '2001::/32', '2001:db8::/32', '2002::/16', '2620:4f:8000::/48', '3fff::/20', '5f00::/16',
  'fc00::/7', 'fe80::/10', 'fec0::/10', 'ff00::/8',
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

function allowList(cidrs: string[] = []): BlockList | undefined {
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

const invalid = (message: string) => new GatewayError(GatewayErrorCode.InvalidMediaInput, { message, param: 'image' });
const invalidUrl = (message: string) => new GatewayError(GatewayErrorCode.InvalidImageUrl, { message });
const forbidden = () => new GatewayError(GatewayErrorCode.ImageUrlForbidden);
/**
 * Every failure to get the image from a URL (unresolvable name, refused or reset connection, TLS
 * error, timeout, non-200 answer, bad redirect, broken body) gets this one answer: the caller learns
 * nothing about which hosts and ports exist or answer (no port-probing oracle). Details stay in the log.
 */
const fetchFailed = () => new GatewayError(GatewayErrorCode.ImageFetchFailed);
const tooLarge = (maxBytes: number) => new GatewayError(GatewayErrorCode.ImageTooLarge, { maxBytes });

/**
 * The image bytes of a recognition request: an http(s) URL (fetched with SSRF checks on every hop),
 * a data URL, or bare base64.
 */
export async function loadImageSource(image: string, limits: ImageSourceLimits): Promise<Buffer> {
  const value = image.trim();
  if (/^https?:\/\//i.test(value)) return fetchImage(value, limits);
  if (/^data:/i.test(value)) {
    const m = /^data:([^;,]*)(;[^,]*)?,(.*)$/is.exec(value);
    if (!m || !/;base64/i.test(m[2] ?? '')) throw invalid('data URL must be base64-encoded (data:image/png;base64,...)');
    if (m[1] && !/^image\//i.test(m[1])) throw invalid(`data URL has media type ${m[1]}, not an image`);
    return decodeBase64(m[3], limits.maxBytes);
  }
  if (/^[a-z][a-z0-9+.-]*:/i.test(value)) throw invalidUrl('image URL must use http or https');
  return decodeBase64(value, limits.maxBytes);
}

function decodeBase64(text: string, maxBytes: number): Buffer {
  const compact = text.replace(/\s+/g, '');
  if (compact === '' || !/^[A-Za-z0-9+/_-]+={0,2}$/.test(compact)) throw invalid('image must be an http(s) URL, a data URL or base64 data');
  if (Math.floor((compact.length * 3) / 4) > maxBytes + 3) throw tooLarge(maxBytes);
  const bytes = Buffer.from(compact, compact.includes('-') || compact.includes('_') ? 'base64url' : 'base64');
  if (bytes.length > maxBytes) throw tooLarge(maxBytes);
  if (bytes.length === 0) throw invalid('image data is empty');
  return bytes;
}

/** undici reports a body destroyed early as an 'error' event; nobody waits for it here. */
function discard(body: NodeJS.ReadableStream & { destroy(): void }): void {
  body.on('error', () => undefined);
  body.destroy();
}

async function vetHost(url: URL, limits: ImageSourceLimits, allowed: BlockList | undefined): Promise<Array<{ address: string; family: number }>> {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (isIP(host)) {
    if (isForbiddenAddress(host, allowed)) throw forbidden();
    return [{ address: host, family: isIP(host) }];
  }
  let addresses: Array<{ address: string; family: number }>;
  try {
    addresses = await (limits.resolve ?? defaultResolver)(host);
  } catch {
    throw fetchFailed();
  }
  if (!addresses.length) throw fetchFailed();
  // Any private answer refuses the whole name: the connection could land on it.
  if (addresses.some((a) => isForbiddenAddress(a.address, allowed))) throw forbidden();
  return addresses;
}

async function fetchImage(start: string, limits: ImageSourceLimits): Promise<Buffer> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), limits.timeoutMs);
  const stop = () => controller.abort();
  limits.signal?.addEventListener('abort', stop, { once: true });
  if (limits.signal?.aborted) controller.abort();
  try {
    return await fetchHops(start, limits, controller.signal);
  } finally {
    // Cleared once done, so a finished download is never aborted afterwards.
    clearTimeout(timer);
    limits.signal?.removeEventListener('abort', stop);
  }
}

async function fetchHops(start: string, limits: ImageSourceLimits, deadline: AbortSignal): Promise<Buffer> {
  const allowed = allowList(limits.allowedCidrs);
  let url: URL;
  try {
    url = new URL(start);
  } catch {
    throw invalidUrl('image URL is not a valid URL');
  }
  for (let hop = 0; ; hop++) {
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw invalidUrl('image URL must use http or https');
    if (url.username || url.password) throw invalidUrl('image URL must not carry credentials');
    const addresses = await vetHost(url, limits, allowed);
    // The connection goes to the addresses just vetted, so a second DNS answer cannot swap in a private one.
    const lookup: LookupFunction = (_hostname, options, callback) => {
      if (options?.all) callback(null, addresses);
      else callback(null, addresses[0].address, addresses[0].family);
    };
    const agent = new Agent({
      connect: { lookup },
      headersTimeout: limits.timeoutMs,
      bodyTimeout: limits.timeoutMs,
    });
    try {
      let res;
      try {
        res = await request(url, {
          method: 'GET',
          dispatcher: agent,
          signal: deadline,
          headers: { accept: 'image/*', 'user-agent': 'ai-gateway-image-fetcher' },
        });
      } catch {
        throw fetchFailed();
      }
      if (res.statusCode >= 300 && res.statusCode < 400 && res.headers.location) {
        res.body.resume();
        if (hop >= limits.maxRedirects) throw fetchFailed();
        const location = Array.isArray(res.headers.location) ? res.headers.location[0] : res.headers.location;
        try {
          url = new URL(location, url);
        } catch {
          throw fetchFailed();
        }
        continue;
      }
      if (res.statusCode !== 200) {
        res.body.resume();
        throw fetchFailed();
      }
      const declared = Number(res.headers['content-length']);
      if (Number.isFinite(declared) && declared > limits.maxBytes) {
        discard(res.body);
        throw tooLarge(limits.maxBytes);
      }
      const chunks: Buffer[] = [];
      let size = 0;
      try {
        // No encoding is set on the body, so its chunks are Buffers.
        for await (const chunk of res.body as AsyncIterable<Buffer>) {
          size += chunk.length;
          if (size > limits.maxBytes) {
            discard(res.body);
            throw tooLarge(limits.maxBytes);
          }
          chunks.push(chunk);
        }
      } catch (e) {
        if (e instanceof GatewayError) throw e;
        throw fetchFailed();
      }
      return Buffer.concat(chunks);
    } finally {
      void agent.close().catch(() => undefined);
    }
  }
}
