import { lookup as dnsLookup } from 'dns/promises';
import { BlockList, isIP } from 'net';
import { Agent, request } from 'undici';
import { OpenAiError } from '@app/envelope';

export type Resolver = (hostname: string) => Promise<Array<{ address: string; family: number }>>;

export interface ImageSourceLimits {
  maxBytes: number;
  timeoutMs: number;
  maxRedirects: number;
  /** CIDRs exempt from the private-address block (tests, trusted internal hosts); empty in production. */
  allowedCidrs?: string[];
  /** DNS resolution; tests inject one to map names onto private addresses without any traffic. */
  resolve?: Resolver;
}

const defaultResolver: Resolver = (hostname) => dnsLookup(hostname, { all: true, verbatim: true });

// Loopback, private, shared, link-local (incl. cloud metadata 169.254.169.254), documentation,
// benchmarking, multicast and reserved ranges: nothing a public image lives on.
const BLOCKED = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.0.2.0', 24], ['192.88.99.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15],
  ['198.51.100.0', 24], ['203.0.113.0', 24], ['224.0.0.0', 4], ['240.0.0.0', 4],
] as const) BLOCKED.addSubnet(net, prefix, 'ipv4');
for (const [net, prefix] of [
  ['::', 128], ['::1', 128], ['100::', 64], ['2001:db8::', 32], ['fc00::', 7], ['fe80::', 10], ['fec0::', 10], ['ff00::', 8],
] as const) BLOCKED.addSubnet(net, prefix, 'ipv6');

/** The IPv4 address inside an IPv4-mapped (::ffff:a.b.c.d), IPv4-compatible or NAT64 (64:ff9b::) IPv6 address. */
function embeddedIpv4(address: string): string | null {
  const groups = expandIpv6(address);
  if (!groups) return null;
  const isMapped = groups.slice(0, 5).every((g) => g === 0) && (groups[5] === 0xffff || groups[5] === 0);
  const isNat64 = groups[0] === 0x64 && groups[1] === 0xff9b && groups.slice(2, 6).every((g) => g === 0);
  if (!isMapped && !isNat64) return null;
  return [groups[6] >> 8, groups[6] & 255, groups[7] >> 8, groups[7] & 255].join('.');
}

function expandIpv6(address: string): number[] | null {
  let text = address.toLowerCase().split('%')[0];
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (v4) {
    const p = v4[1].split('.').map(Number);
    text = text.slice(0, -v4[1].length) + ((p[0] << 8) | p[1]).toString(16) + ':' + ((p[2] << 8) | p[3]).toString(16);
  }
  const [head, tail] = text.split('::');
  const h = head ? head.split(':') : [];
  const t = tail !== undefined && tail !== '' ? tail.split(':') : [];
  const fill = text.includes('::') ? 8 - h.length - t.length : 0;
  const groups = [...h, ...Array(fill).fill('0'), ...t].map((g) => parseInt(g, 16));
  return groups.length === 8 && groups.every((g) => g >= 0 && g <= 0xffff) ? groups : null;
}

export function isForbiddenAddress(address: string, allowed?: BlockList): boolean {
  const family = isIP(address);
  if (family === 0) return true;
  if (allowed?.check(address, family === 4 ? 'ipv4' : 'ipv6')) return false;
  if (family === 6) {
    const v4 = embeddedIpv4(address);
    if (v4) return isForbiddenAddress(v4, allowed);
    return BLOCKED.check(address, 'ipv6');
  }
  return BLOCKED.check(address, 'ipv4');
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

const invalid = (message: string, code = 'invalid_image') => new OpenAiError(400, message, { type: 'invalid_request_error', code, param: 'image' });
const forbidden = () => invalid('image URL points at a private, loopback or link-local address, which is not allowed', 'image_url_forbidden');
const tooLarge = (max: number) => new OpenAiError(413, `image is larger than ${max} bytes`, { code: 'image_too_large', param: 'image' });

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
  if (/^[a-z][a-z0-9+.-]*:/i.test(value)) throw invalid('image URL must use http or https', 'invalid_image_url');
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
    throw invalid(`image URL host ${host} could not be resolved`, 'invalid_image_url');
  }
  if (!addresses.length) throw invalid(`image URL host ${host} could not be resolved`, 'invalid_image_url');
  // Any private answer refuses the whole name: the connection could land on it.
  if (addresses.some((a) => isForbiddenAddress(a.address, allowed))) throw forbidden();
  return addresses;
}

async function fetchImage(start: string, limits: ImageSourceLimits): Promise<Buffer> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), limits.timeoutMs);
  try {
    return await fetchHops(start, limits, controller.signal);
  } finally {
    // Cleared once done, so a finished download is never aborted afterwards.
    clearTimeout(timer);
  }
}

async function fetchHops(start: string, limits: ImageSourceLimits, deadline: AbortSignal): Promise<Buffer> {
  const allowed = allowList(limits.allowedCidrs);
  let url: URL;
  try {
    url = new URL(start);
  } catch {
    throw invalid('image URL is not a valid URL', 'invalid_image_url');
  }
  for (let hop = 0; ; hop++) {
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw invalid('image URL must use http or https', 'invalid_image_url');
    if (url.username || url.password) throw invalid('image URL must not carry credentials', 'invalid_image_url');
    const addresses = await vetHost(url, limits, allowed);
    // The connection goes to the addresses just vetted, so a second DNS answer cannot swap in a private one.
    const agent = new Agent({
      connect: {
        lookup: (_hostname: string, options: any, callback: any) => {
          if (options?.all) callback(null, addresses);
          else callback(null, addresses[0].address, addresses[0].family);
        },
      },
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
      } catch (e) {
        if (deadline.aborted) throw invalid(`image URL did not answer within ${limits.timeoutMs} ms`, 'image_fetch_timeout');
        throw invalid(`image URL could not be fetched: ${(e as Error).message}`, 'image_fetch_failed');
      }
      if (res.statusCode >= 300 && res.statusCode < 400 && res.headers.location) {
        res.body.resume();
        if (hop >= limits.maxRedirects) throw invalid(`image URL redirected more than ${limits.maxRedirects} times`, 'image_fetch_failed');
        const location = Array.isArray(res.headers.location) ? res.headers.location[0] : res.headers.location;
        try {
          url = new URL(location, url);
        } catch {
          throw invalid('image URL redirected to an invalid location', 'image_fetch_failed');
        }
        continue;
      }
      if (res.statusCode !== 200) {
        res.body.resume();
        throw invalid(`image URL answered HTTP ${res.statusCode}`, 'image_fetch_failed');
      }
      const declared = Number(res.headers['content-length']);
      if (Number.isFinite(declared) && declared > limits.maxBytes) {
        discard(res.body);
        throw tooLarge(limits.maxBytes);
      }
      const chunks: Buffer[] = [];
      let size = 0;
      try {
        for await (const chunk of res.body) {
          size += chunk.length;
          if (size > limits.maxBytes) {
            discard(res.body);
            throw tooLarge(limits.maxBytes);
          }
          chunks.push(chunk);
        }
      } catch (e) {
        if (e instanceof OpenAiError) throw e;
        if (deadline.aborted) throw invalid(`image URL did not answer within ${limits.timeoutMs} ms`, 'image_fetch_timeout');
        throw invalid('image download broke off', 'image_fetch_failed');
      }
      return Buffer.concat(chunks);
    } finally {
      void agent.close().catch(() => undefined);
    }
  }
}
