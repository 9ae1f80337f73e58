import type { BlockList } from 'net';
import { Agent, request } from 'undici';
import { GatewayError, GatewayErrorCode } from '../errors';
import {
  AddressRefused,
  addressAllowList,
  isForbiddenAddress,
  pinnedLookup,
  publicAddressesOf,
  type Resolver,
} from '@app/platform';

// The guard lives in libs/platform/src/net/public-address.ts (webhook deliveries use it too); re-exported for this folder's callers and spec.
export { isForbiddenAddress, type Resolver };

/** AI_MEDIA_FETCH_ALLOWED_CIDRS as a list: the addresses every image fetch of the gateway may reach besides public ones. */
export function allowedFetchCidrs(config: { AI_MEDIA_FETCH_ALLOWED_CIDRS?: string }): string[] {
  return (config.AI_MEDIA_FETCH_ALLOWED_CIDRS ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
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
  /** The request field the image came from, named by every refusal (default `image`). */
  param?: string;
}

type Named = Pick<ImageSourceLimits, 'param'>;
const field = (at: Named) => at.param ?? 'image';
const invalid = (message: string, at: Named) =>
  new GatewayError(GatewayErrorCode.InvalidMediaInput, { message, param: field(at) });
const invalidUrl = (message: string, at: Named) =>
  new GatewayError(GatewayErrorCode.InvalidImageUrl, { message, param: field(at) });
const forbidden = (at: Named) => new GatewayError(GatewayErrorCode.ImageUrlForbidden, { param: field(at) });
/**
 * Every failure to get the image from a URL (unresolvable name, refused or reset connection, TLS
 * error, timeout, non-200 answer, bad redirect, broken body) gets this one answer: the caller learns
 * nothing about which hosts and ports exist or answer (no port-probing oracle). Details stay in the log.
 */
const fetchFailed = (at: Named) => new GatewayError(GatewayErrorCode.ImageFetchFailed, { param: field(at) });
const tooLarge = (at: ImageSourceLimits) =>
  new GatewayError(GatewayErrorCode.ImageTooLarge, { maxBytes: at.maxBytes, param: field(at) });

/**
 * The image bytes of a recognition request: an http(s) URL (fetched with SSRF checks on every hop),
 * a data URL, or bare base64.
 */
export async function loadImageSource(image: string, limits: ImageSourceLimits): Promise<Buffer> {
  const value = image.trim();
  if (/^https?:\/\//i.test(value)) return fetchImage(value, limits);
  if (/^data:/i.test(value)) {
    const m = /^data:([^;,]*)(;[^,]*)?,(.*)$/is.exec(value);
    if (!m || !/;base64/i.test(m[2] ?? ''))
      throw invalid('data URL must be base64-encoded (data:image/png;base64,...)', limits);
    if (m[1] && !/^image\//i.test(m[1])) throw invalid(`data URL has media type ${m[1]}, not an image`, limits);
    return decodeBase64(m[3], limits);
  }
  if (/^[a-z][a-z0-9+.-]*:/i.test(value)) throw invalidUrl('image URL must use http or https', limits);
  return decodeBase64(value, limits);
}

function decodeBase64(text: string, limits: ImageSourceLimits): Buffer {
  const maxBytes = limits.maxBytes;
  const compact = text.replace(/\s+/g, '');
  if (compact === '' || !/^[A-Za-z0-9+/_-]+={0,2}$/.test(compact))
    throw invalid('image must be an http(s) URL, a data URL or base64 data', limits);
  if (Math.floor((compact.length * 3) / 4) > maxBytes + 3) throw tooLarge(limits);
  const bytes = Buffer.from(compact, compact.includes('-') || compact.includes('_') ? 'base64url' : 'base64');
  if (bytes.length > maxBytes) throw tooLarge(limits);
  if (bytes.length === 0) throw invalid('image data is empty', limits);
  return bytes;
}

/** undici reports a body destroyed early as an 'error' event; nobody waits for it here. */
function discard(body: NodeJS.ReadableStream & { destroy(): void }): void {
  body.on('error', () => undefined);
  body.destroy();
}

async function vetHost(
  url: URL,
  limits: ImageSourceLimits,
  allowed: BlockList | undefined,
  deadline: AbortSignal,
): Promise<Array<{ address: string; family: number }>> {
  try {
    // The fetch's deadline (AI_MEDIA_FETCH_TIMEOUT_MS, or the caller leaving) ends the name's lookup too.
    return await publicAddressesOf(url, { allowed, resolve: limits.resolve, signal: deadline });
  } catch (e) {
    if (e instanceof AddressRefused && e.reason === 'forbidden') throw forbidden(limits);
    throw fetchFailed(limits);
  }
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
  const allowed = addressAllowList(limits.allowedCidrs);
  let url: URL;
  try {
    url = new URL(start);
  } catch {
    throw invalidUrl('image URL is not a valid URL', limits);
  }
  for (let hop = 0; ; hop++) {
    if (url.protocol !== 'http:' && url.protocol !== 'https:')
      throw invalidUrl('image URL must use http or https', limits);
    if (url.username || url.password) throw invalidUrl('image URL must not carry credentials', limits);
    const addresses = await vetHost(url, limits, allowed, deadline);
    // The connection goes to the addresses just vetted, so a second DNS answer cannot swap in a private one.
    const lookup = pinnedLookup(addresses);
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
        throw fetchFailed(limits);
      }
      if (res.statusCode >= 300 && res.statusCode < 400 && res.headers.location) {
        res.body.resume();
        if (hop >= limits.maxRedirects) throw fetchFailed(limits);
        const location = Array.isArray(res.headers.location) ? res.headers.location[0] : res.headers.location;
        try {
          url = new URL(location, url);
        } catch {
          throw fetchFailed(limits);
        }
        continue;
      }
      if (res.statusCode !== 200) {
        res.body.resume();
        throw fetchFailed(limits);
      }
      const declared = Number(res.headers['content-length']);
      if (Number.isFinite(declared) && declared > limits.maxBytes) {
        discard(res.body);
        throw tooLarge(limits);
      }
      const chunks: Buffer[] = [];
      let size = 0;
      try {
        // No encoding is set on the body, so its chunks are Buffers.
        for await (const chunk of res.body as AsyncIterable<Buffer>) {
          size += chunk.length;
          if (size > limits.maxBytes) {
            discard(res.body);
            throw tooLarge(limits);
          }
          chunks.push(chunk);
        }
      } catch (e) {
        if (e instanceof GatewayError) throw e;
        throw fetchFailed(limits);
      }
      return Buffer.concat(chunks);
    } finally {
      void agent.close().catch(() => undefined);
    }
  }
}
