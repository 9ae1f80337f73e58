// No imports: tracing.ts loads this before http and pg are required (so they can be instrumented).

// Path segments that carry a value exchangeable for a login (a QR login state, a WeChat scene or ticket):
// the segment after one of these names. One pass, no backtracking (a fixed alternation then [^/]+).
const SECRET_PATH_SEGMENT = /\/(state|scene|scene_str|ticket)\/[^/]+/gi;

/**
 * The path a log line may show for a request URL: no query string (codes, states, tickets, signatures
 * ride there) and the value after /state/, /scene/, /ticket/ replaced by [redacted]
 * (`/api/v1/app/oauth2/qrcode/state/{state}` is polled with a state that logs its owner in).
 */
export function loggedPath(url: string): string {
  const q = url.indexOf('?');
  const path = q === -1 ? url : url.slice(0, q);
  return path.replace(SECRET_PATH_SEGMENT, '/$1/[redacted]');
}
