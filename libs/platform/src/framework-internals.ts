// The one place that relies on how Nest, Express, Node's http server and TypeORM work inside, beyond their
// documented surface. framework-internals.spec.ts fails loudly when an upgrade changes any of it.
import { ArgumentMetadata, CanActivate, ForbiddenException, PipeTransform, Type } from '@nestjs/common';
import type { ContextId } from '@nestjs/core';
import { FORBIDDEN_MESSAGE } from '@nestjs/core/guards/constants';
import { ExecutionContextHost } from '@nestjs/core/helpers/execution-context-host';
import { STATIC_CONTEXT } from '@nestjs/core/injector/constants';
import { markRejectedByPipes } from '@nestjs/core/router/rejected-by-pipes';
import { RouterExecutionContext } from '@nestjs/core/router/router-execution-context';
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

type RouteHandler = (req: unknown, res: unknown, next: unknown) => Promise<unknown>;
type Callback = (...args: unknown[]) => unknown;
interface ParamOptions {
  index: number;
  type: number | string;
  data: unknown;
  metatype?: unknown;
  pipes: PipeTransform[];
  extractValue: (req: unknown, res: unknown, next: unknown) => unknown;
}
/** The parts of Nest's RouterExecutionContext a lean handler is built from (all of them Nest's own). */
interface NestRouteContext {
  create(
    instance: object,
    callback: Callback,
    methodName: string,
    moduleKey: string,
    requestMethod: number,
    contextId?: ContextId,
    inquirerId?: string,
  ): RouteHandler;
  getMetadata(
    instance: object,
    callback: Callback,
    methodName: string,
    moduleKey: string,
    requestMethod: number,
    contextType: 'http',
  ): {
    argsLength: number;
    fnHandleResponse: (result: unknown, res: unknown, req: unknown) => Promise<unknown>;
    isSseHandler: boolean;
    paramtypes: unknown[];
    getParamsMetadata: (moduleKey: string, contextId?: ContextId, inquirerId?: string) => ParamOptions[];
    httpStatusCode: number;
    hasCustomHeaders: boolean;
    responseHeaders: unknown[];
  };
  isPipeable(type: number | string): boolean;
  contextUtils: { mergeParamsMetatypes(params: ParamOptions[], paramtypes: unknown[]): ParamOptions[] };
  pipesContextCreator: { create(...a: unknown[]): PipeTransform[] };
  guardsContextCreator: { create(...a: unknown[]): CanActivate[] };
  interceptorsContextCreator: { create(...a: unknown[]): unknown[] };
  guardsConsumer: { pickResult(result: unknown): Promise<boolean> };
  pipesConsumer: { paramsTokenFactory: { exchangeEnumForString(type: number | string): string } };
  responseController: {
    setStatus(res: unknown, code: number): void;
    setHeaders(res: unknown, headers: unknown[]): void;
  };
}
const LEAN = Symbol('leanRouteHandlers');

/**
 * Makes Nest build each route's handler so that it does the same work with fewer promises: Nest's own
 * handler (RouterExecutionContext.create) wraps every guard, every parameter and every pipe of every
 * request in promises (~40 per request on a route with two guards and two piped parameters) and goes
 * through its interceptor chain when there is none. The lean handler runs the very guards, parameter
 * factories, pipes and response handling Nest found for the route, in Nest's order, awaiting only what
 * is asynchronous. Routes it does not cover keep Nest's handler: request-scoped controllers, SSE routes
 * and routes with interceptors (membership's envelope is one). Errors leave it as they leave Nest's
 * (the router proxy hands them to the exception filters), a pipe's refusal marked as Nest marks it.
 */
export function enableLeanRouteHandlers(): void {
  const proto = RouterExecutionContext.prototype as unknown as NestRouteContext & { [LEAN]?: true };
  if (proto[LEAN]) return;
  proto[LEAN] = true;
  // eslint-disable-next-line @typescript-eslint/unbound-method -- Nest's own create, applied below with its context as this
  const create = proto.create;
  proto.create = function (
    this: NestRouteContext,
    instance,
    callback,
    methodName,
    moduleKey,
    requestMethod,
    contextId = STATIC_CONTEXT,
    inquirerId,
  ) {
    const nest = create.call(this, instance, callback, methodName, moduleKey, requestMethod, contextId, inquirerId);
    if (contextId !== STATIC_CONTEXT) return nest;
    return leanHandler(this, instance, callback, methodName, moduleKey, requestMethod, inquirerId) ?? nest;
  };
}

function leanHandler(
  nest: NestRouteContext,
  instance: object,
  callback: Callback,
  methodName: string,
  moduleKey: string,
  requestMethod: number,
  inquirerId?: string,
): RouteHandler | undefined {
  const meta = nest.getMetadata(instance, callback, methodName, moduleKey, requestMethod, 'http');
  if (meta.isSseHandler) return undefined;
  if (nest.interceptorsContextCreator.create(instance, callback, moduleKey, STATIC_CONTEXT, inquirerId).length > 0)
    return undefined;
  const guards = nest.guardsContextCreator.create(instance, callback, moduleKey, STATIC_CONTEXT, inquirerId);
  const pipes = nest.pipesContextCreator.create(instance, callback, moduleKey, STATIC_CONTEXT, inquirerId);
  const params: LeanParam[] = nest.contextUtils
    .mergeParamsMetatypes(meta.getParamsMetadata(moduleKey, STATIC_CONTEXT, inquirerId), meta.paramtypes)
    .map((p) => ({
      index: p.index,
      extract: p.extractValue,
      pipeable: nest.isPipeable(p.type),
      // Nest pipes only these parameter types (global, controller, method pipes, then the parameter's own).
      pipes: nest.isPipeable(p.type) ? [...pipes, ...p.pipes] : [],
      metatype: p.metatype,
      type: nest.pipesConsumer.paramsTokenFactory.exchangeEnumForString(p.type),
      data: p.data,
    }));
  const { argsLength, fnHandleResponse, httpStatusCode } = meta;
  const headers = meta.hasCustomHeaders ? meta.responseHeaders : undefined;
  const type = instance.constructor as Type;
  return async (req, res, next) => {
    if (guards.length > 0) {
      const context = new ExecutionContextHost([req, res, next], type, callback);
      context.setType('http');
      for (const guard of guards) {
        const allowed = guard.canActivate(context);
        if (allowed === true) continue;
        if (allowed === false || !(await nest.guardsConsumer.pickResult(allowed)))
          throw new ForbiddenException(FORBIDDEN_MESSAGE);
      }
    }
    nest.responseController.setStatus(res, httpStatusCode);
    if (headers !== undefined) nest.responseController.setHeaders(res, headers);
    const args: unknown[] = new Array(argsLength).fill(undefined);
    try {
      const waiting = resolveParams(params, args, [req, res, next]);
      if (waiting !== undefined) await waiting;
    } catch (e) {
      markRejectedByPipes(req);
      throw e;
    }
    let result = callback.apply(instance, args);
    if (isThenable(result)) result = await result;
    await fnHandleResponse(result, res, req);
  };
}

interface LeanParam {
  index: number;
  extract: ParamOptions['extractValue'];
  pipeable: boolean;
  pipes: PipeTransform[];
  metatype: unknown;
  type: string;
  data: unknown;
}

/**
 * Nest's parameter resolution (RouterExecutionContext.createPipesFn) without a promise where nothing is
 * asynchronous. As there: every parameter's factory runs, in order; then each pipeable parameter's value
 * (awaited when it is a thenable, pipes or not) goes through its pipes, the parameters side by side, each
 * pipe given a new ArgumentMetadata. The failure that wins is the one Nest's Promise.all sees first: a
 * factory's (the first), else among pipes failing at once the parameter with the fewest pipes (each of
 * Nest's steps is a turn of the microtask queue), the first of them; else the first asynchronous one.
 * Answers a promise only when some parameter waits on a thenable.
 */
function resolveParams(
  params: LeanParam[],
  args: unknown[],
  [req, res, next]: unknown[],
): Promise<unknown> | undefined {
  const values: unknown[] = new Array(params.length);
  let failed: { error: unknown } | undefined;
  for (let i = 0; i < params.length; i++) {
    try {
      values[i] = params[i].extract(req, res, next);
    } catch (e) {
      failed ??= { error: e };
    }
  }
  if (failed) throw failed.error;
  let failure: { error: unknown; pipes: number } | undefined;
  let waiting: Promise<void>[] | undefined;
  // Parameters whose pipes run now: each pipe of every parameter before the next pipe of any, as Nest's steps go.
  const running: number[] = [];
  for (let i = 0; i < params.length; i++) {
    const p = params[i];
    if (!p.pipeable) args[p.index] = values[i];
    else if (isThenable(values[i])) (waiting ??= []).push(finishPipes(p, 0, values[i] as PromiseLike<unknown>, args));
    else running.push(i);
  }
  for (let depth = 0; running.length > 0; depth++) {
    let kept = 0;
    for (const i of running) {
      const p = params[i];
      if (depth === p.pipes.length) {
        args[p.index] = values[i];
        continue;
      }
      try {
        values[i] = transform(p, depth, values[i]);
      } catch (e) {
        if (failure === undefined || p.pipes.length < failure.pipes) failure = { error: e, pipes: p.pipes.length };
        continue;
      }
      if (isThenable(values[i])) (waiting ??= []).push(finishPipes(p, depth + 1, values[i], args));
      else running[kept++] = i;
    }
    running.length = kept;
  }
  if (failure) {
    // Left to finish as in Nest, their outcome unused.
    for (const w of waiting ?? []) w.catch(() => undefined);
    throw failure.error;
  }
  return waiting && Promise.all(waiting);
}

/** The rest of a parameter's pipes, from `next`, once `value` (a thenable) is resolved. */
async function finishPipes(p: LeanParam, next: number, value: PromiseLike<unknown>, args: unknown[]): Promise<void> {
  let v = await value;
  while (next < p.pipes.length) {
    v = transform(p, next++, v);
    if (isThenable(v)) v = await v;
  }
  args[p.index] = v;
}

function transform(p: LeanParam, pipe: number, value: unknown): unknown {
  return p.pipes[pipe].transform(value, { metatype: p.metatype, type: p.type, data: p.data } as ArgumentMetadata);
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    value !== null &&
    (typeof value === 'object' || typeof value === 'function') &&
    typeof (value as { then?: unknown }).then === 'function'
  );
}
