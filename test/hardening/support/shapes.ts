// What each app's answers must look like, success or failure.
import type { RawResponse } from './http';

/** Envelope code -> HTTP status, from docs/contract/DECISIONS.md. Codes equal to a status map to themselves. */
const BUSINESS_STATUS: Record<number, number> = {
  10000: 400,
  10002: 401,
  10003: 400,
  10004: 502,
  10005: 409,
  10008: 423,
  10010: 403,
  10011: 401,
  10012: 401,
  10013: 400,
};

/** null when the answer is a well-formed membership answer for its status; else why not. */
export function membershipShapeProblem(res: RawResponse, path = ''): string | null {
  const ct = String(res.headers['content-type'] ?? '');
  if (res.status >= 300 && res.status < 400) return res.headers.location ? null : 'redirect without Location';
  if (res.status >= 200 && res.status < 300) {
    // Media, metrics, WeChat echo, the actuator's Spring-style health and the JWKS (RFC 7517's own shape) are
    // not enveloped by design.
    if (!/json/.test(ct) || /\/actuator\//.test(path) || /\/\.well-known\//.test(path)) return null;
    const b = res.json;
    return b && b.code === 200 && typeof b.message === 'string' && 'data' in b
      ? null
      : `2xx JSON is not an envelope: ${res.text.slice(0, 200)}`;
  }
  const b = res.json;
  if (!b || typeof b !== 'object')
    return `error ${res.status} is not a JSON envelope (${ct}): ${res.text.slice(0, 200)}`;
  if (typeof b.code !== 'number' || typeof b.message !== 'string' || !('data' in b))
    return `error ${res.status} envelope malformed: ${res.text.slice(0, 200)}`;
  const expected = BUSINESS_STATUS[b.code] ?? b.code;
  if (expected !== res.status) return `envelope code ${b.code} does not match HTTP ${res.status}`;
  return null;
}

/** null when the answer is a well-formed AI gateway answer; errors must be in the OpenAI shape. */
export function openAiShapeProblem(res: RawResponse): string | null {
  if (res.status < 400) return null;
  const e = res.json?.error;
  if (!e || typeof e !== 'object') return `error ${res.status} is not {"error":{...}}: ${res.text.slice(0, 200)}`;
  if (typeof e.message !== 'string' || typeof e.type !== 'string' || !('code' in e) || !('param' in e))
    return `error ${res.status} misses message/type/code/param: ${res.text.slice(0, 200)}`;
  return null;
}
