// The one place that relies on how Express, Node's http server and TypeORM work inside, beyond their
// documented surface. framework-internals.spec.ts fails loudly when an upgrade changes any of it.
import { IncomingMessage, ServerResponse } from 'http';
import type { DataSource } from 'typeorm';

interface ExpressPrototypes {
  request: object;
  response: object;
}

/**
 * Request and response classes for `http.createServer({ IncomingMessage, ServerResponse })` whose
 * instances are born with Express's prototypes. Express's `app.handle` sets `app.request` /
 * `app.response` as the prototypes of every request (Object.setPrototypeOf); on an object that already
 * has them that is a no-op, so V8 keeps one shape for every request and response instead of a new one
 * per request (the swap put Node's http internals on their slow paths).
 * The classes extend Node's (so V8 sizes their instances as Node's own: a function that applies Node's
 * constructor to an object of another prototype made every response a dictionary-mode object), and
 * their prototypes become the app's `request` / `response`, chained to Express's.
 */
export function expressShapedClasses(app: ExpressPrototypes): {
  IncomingMessage: typeof IncomingMessage;
  ServerResponse: typeof ServerResponse;
} {
  class ExpressRequest extends IncomingMessage {}
  class ExpressResponse extends ServerResponse {}
  Object.setPrototypeOf(ExpressRequest.prototype, app.request);
  Object.setPrototypeOf(ExpressResponse.prototype, app.response);
  app.request = ExpressRequest.prototype;
  app.response = ExpressResponse.prototype;
  return { IncomingMessage: ExpressRequest, ServerResponse: ExpressResponse as typeof ServerResponse };
}

const HEAD_HOOKS = Symbol('headHooks');
const HEAD_HEADERS = Symbol('headHeaders');
type HeadHook = (res: ServerResponse) => void;
type HeadResponse = ServerResponse & { [HEAD_HOOKS]?: HeadHook[]; [HEAD_HEADERS]?: string[] };

/**
 * Makes `onHead` and `headHeaders` work for the app's responses: Express's response prototype gets a
 * `writeHead` that runs the hooks registered on that response, then writes the head with the headers
 * given to headHeaders added to the call's own. Node writes every head through `writeHead` (an implicit
 * head too: `_implicitHeader` calls it), so every answer gets them, however it is written; a head whose
 * headers all come in that one call takes Node's direct path (no per-header setHeader).
 */
export function enableHeadHooks(app: ExpressPrototypes): void {
  const response = app.response as { writeHead: ServerResponse['writeHead'] & { [HEAD_HOOKS]?: true } };
  if (response.writeHead[HEAD_HOOKS]) return; // already wrapped (here or on a prototype it inherits from)
  // eslint-disable-next-line @typescript-eslint/unbound-method -- Node's own writeHead, applied below with the response as this
  const writeHead = ServerResponse.prototype.writeHead;
  response.writeHead = function (this: HeadResponse, ...args: unknown[]) {
    if (!this.headersSent) {
      const hooks = this[HEAD_HOOKS];
      if (hooks !== undefined) {
        this[HEAD_HOOKS] = undefined;
        for (const hook of hooks) hook(this);
      }
      const pending = this[HEAD_HEADERS];
      if (pending !== undefined) {
        this[HEAD_HEADERS] = undefined;
        args = withHeadHeaders(this, args, pending);
      }
    }
    return (writeHead as (...a: unknown[]) => ServerResponse).apply(this, args);
  };
  response.writeHead[HEAD_HOOKS] = true;
}

/**
 * writeHead's arguments (status, [statusMessage], [headers]) with `pending` ([name, value, ...]) added to
 * its headers. A header set with setHeader or given in the call wins over a pending one of the same name.
 */
function withHeadHeaders(res: ServerResponse, args: unknown[], pending: string[]): unknown[] {
  const [status, ...rest] = args;
  const message = typeof rest[0] === 'string' ? rest.shift() : undefined;
  const given = rest[0];
  const flat: string[] = [];
  if (Array.isArray(given)) {
    for (const item of given as unknown[]) {
      if (Array.isArray(item)) flat.push(String(item[0]), String(item[1]));
      else flat.push(String(item));
    }
  } else if (given !== undefined && given !== null && typeof given === 'object') {
    for (const [name, value] of Object.entries(given)) {
      if (Array.isArray(value)) for (const v of value as unknown[]) flat.push(name, String(v));
      else if (value !== undefined) flat.push(name, String(value));
    }
  }
  const taken = new Set<string>();
  for (let i = 0; i < flat.length; i += 2) taken.add(flat[i].toLowerCase());
  const added: string[] = [];
  for (let i = 0; i < pending.length; i += 2) {
    const name = pending[i];
    if (!taken.has(name.toLowerCase()) && !res.hasHeader(name)) added.push(name, pending[i + 1]);
  }
  const headers = [...added, ...flat];
  return message === undefined ? [status, headers] : [status, message, headers];
}

/** Runs `hook` just before this response's head is written (once; headers set there are sent). */
export function onHead(res: ServerResponse, hook: HeadHook): void {
  const r = res as HeadResponse;
  (r[HEAD_HOOKS] ??= []).push(hook);
}

/**
 * Headers ([name, value, ...]) written with this response's head, in the same writeHead call as the
 * answer's own (a header set explicitly, with setHeader or in the call, wins). Not visible to getHeader
 * before the head is written.
 */
export function headHeaders(res: ServerResponse, flat: readonly string[]): void {
  const r = res as HeadResponse;
  const pending = (r[HEAD_HEADERS] ??= []);
  for (const item of flat) pending.push(item);
}

interface PgPool {
  query(q: { name: string; text: string; values: unknown[] }): Promise<{ rows: Record<string, unknown>[] }>;
}

/** The `pg` pool behind a TypeORM PostgreSQL data source (TypeORM keeps it as `driver.master`). */
export function pgPoolOf(dataSource: DataSource): PgPool {
  const pool = (dataSource.driver as unknown as { master?: PgPool }).master;
  if (pool === undefined || typeof pool.query !== 'function')
    throw new Error('TypeORM no longer keeps the pg pool as driver.master (framework-internals.ts)');
  return pool;
}
