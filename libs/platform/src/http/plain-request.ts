import type { IncomingMessage, ServerResponse } from 'http';
// Express's own dependency for req.ip; declared in package.json so the import does not rely on hoisting.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const proxyaddr: (req: IncomingMessage, trust: (addr: string, i: number) => boolean) => string = require('proxy-addr');

/**
 * Routes served outside the Express pipeline (the gateway's lean path, membership's profile read)
 * keep Node's own request and response objects. Express makes them its own by swapping their
 * prototypes (Object.setPrototypeOf) on every request; V8 then treats each request and response as an
 * object of a new shape, so Node's http code that touches them runs on its slow paths: a third of the
 * gateway's CPU per proxied call (npm run bench, throughput 2300 -> 3350 req/s without the swap).
 * These helpers give what those routes need of Express without the swap.
 */

/** What Express's `req.ip` is for this app: the client address, honouring its `trust proxy` setting (TRUST_PROXY). */
export function expressClientIp(req: IncomingMessage, expressApp: { get(name: string): unknown }): string {
  const trust = expressApp.get('trust proxy fn') as ((addr: string, i: number) => boolean) | undefined;
  return trust ? proxyaddr(req, trust) : (req.socket?.remoteAddress ?? '');
}

/**
 * Makes the pair Express's request and response (as Express's init middleware does) for the rare paths
 * that need its methods: error answers (`res.status().json()`) and handing over to the full pipeline.
 */
export function asExpress(req: IncomingMessage, res: ServerResponse, expressApp: { request: object; response: object }): void {
  if (Object.getPrototypeOf(req) !== expressApp.request) Object.setPrototypeOf(req, expressApp.request);
  if (Object.getPrototypeOf(res) !== expressApp.response) Object.setPrototypeOf(res, expressApp.response);
  (req as any).res = res;
  (res as any).req = req;
  (res as any).locals ??= Object.create(null);
}
