import { RequestMethod, SetMetadata } from '@nestjs/common';
import { PATH_METADATA, METHOD_METADATA } from '@nestjs/common/constants';
import { MetadataScanner, ModulesContainer } from '@nestjs/core';
import { match } from 'path-to-regexp';
import { IS_PUBLIC } from '@app/auth';

export const BODY_LIMIT = 'http:bodyLimit';

/**
 * The largest JSON or form body (bytes, after decompression) of a route or of every route of a controller,
 * instead of the default (PUBLIC_BODY_LIMIT_BYTES for a public route, BODY_LIMIT_BYTES otherwise).
 */
export const BodyLimit = (bytes: number) => SetMetadata(BODY_LIMIT, bytes);

export const JSON_MEMBERS_LIMIT = 'http:jsonMembersLimit';

/**
 * The most object members a JSON body of a route (or of every route of a controller) may have, instead of
 * MAX_JSON_MEMBERS (json-depth.ts): for a route whose bodies are larger in structure by nature.
 */
export const JsonMembersLimit = (members: number) => SetMetadata(JSON_MEMBERS_LIMIT, members);

export const JSON_ITEMS_LIMIT = 'http:jsonItemsLimit';

export const METERED = 'http:metered';

/**
 * A route whose calls are metered and limited (the gateway's CallAdmission): its authentication may refuse a
 * caller before the body is read when its limits would refuse any call of it (a used-up budget, its concurrent
 * calls all in use).
 */
export const Metered = () => SetMetadata(METERED, true);

/**
 * The most array items and object members a JSON body of a route (or of every route of a controller) may have,
 * instead of MAX_JSON_ITEMS (json-depth.ts): for a route whose ordinary bodies are long arrays of numbers.
 */
export const JsonItemsLimit = (items: number) => SetMetadata(JSON_ITEMS_LIMIT, items);

/** One route as Express matches it: a method (`ALL` for any) and a path pattern with the global prefix. */
export interface RouteEntry {
  method: string;
  path: string;
  public: boolean;
  bodyLimit?: number;
  jsonMembers?: number;
  jsonItems?: number;
  metered?: boolean;
}

export interface RouteInfo {
  public: boolean;
  bodyLimit?: number;
  /** Most object members of its JSON body (JsonMembersLimit), when not the default. */
  jsonMembers?: number;
  /** Most array items and object members of its JSON body (JsonItemsLimit), when not the default. */
  jsonItems?: number;
  /** The route's path pattern with the global prefix (the metrics' route label). */
  pattern: string;
  /** Its calls are metered (`@Metered()`). */
  metered?: boolean;
}

interface Compiled extends RouteInfo {
  method: string;
  matches: (path: string) => unknown;
}

const CACHE_MAX = 1024;

/**
 * Which route a request goes to, found before Express routes it (the pipeline's edge stages and body
 * readers run first): the same patterns matched the way Express 5's router matches them (path-to-regexp,
 * case-insensitive, an optional trailing slash, the first registered route wins, HEAD answered by GET).
 */
export class RouteTable {
  private readonly routes: Compiled[];
  private readonly cache = new Map<string, RouteInfo | null>();

  constructor(entries: RouteEntry[]) {
    this.routes = entries.map((e) => {
      const m = match(e.path, { sensitive: false, end: true, trailing: true, decode: false });
      return {
        method: e.method.toUpperCase(),
        public: e.public,
        bodyLimit: e.bodyLimit,
        jsonMembers: e.jsonMembers,
        jsonItems: e.jsonItems,
        metered: e.metered,
        pattern: e.path,
        matches: m,
      };
    });
  }

  /** The route `method` and `pathname` (without query) go to, or undefined when none does (a 404). */
  find(method: string | undefined, pathname: string): RouteInfo | undefined {
    const verb = (method ?? 'GET').toUpperCase();
    const key = `${verb} ${pathname}`;
    const cached = this.cache.get(key);
    if (cached !== undefined) return cached ?? undefined;
    let found: RouteInfo | null = null;
    for (const r of this.routes) {
      if (r.method !== verb && r.method !== 'ALL' && !(verb === 'HEAD' && r.method === 'GET')) continue;
      if (r.matches(pathname) !== false) {
        found = {
          public: r.public,
          bodyLimit: r.bodyLimit,
          jsonMembers: r.jsonMembers,
          jsonItems: r.jsonItems,
          metered: r.metered,
          pattern: r.pattern,
        };
        break;
      }
    }
    // Bounded: a stranger sending random paths costs a scan each, never memory.
    if (this.cache.size >= CACHE_MAX) this.cache.clear();
    this.cache.set(key, found);
    return found ?? undefined;
  }
}

/**
 * The path of a request target as Express's router matches it (parseurl's pathname, not decoded): no
 * query, no fragment (`/a/b#x` is routed as `/a/b`), and the path of an absolute-form target
 * (`http://host/a/b`, which Node accepts). A different reading here would let a stranger's request skip
 * authenticate-first while Express still routes it to a protected handler.
 */
export function pathnameOf(url: string | undefined): string {
  let u = url ?? '/';
  const end = u.search(/[?#]/);
  if (end !== -1) u = u.slice(0, end);
  if (u[0] !== '/') {
    const origin = /^[a-z][a-z0-9+.-]*:\/\/[^/]*/i.exec(u);
    if (origin) u = u.slice(origin[0].length) || '/';
  }
  return u;
}

const join = (...parts: string[]) =>
  '/' +
  parts
    .flatMap((p) => p.split('/'))
    .filter(Boolean)
    .join('/');

/**
 * Every controller route of the app with its `@Public()`, `@BodyLimit`, `@JsonMembersLimit`, `@JsonItemsLimit` and `@Metered()` metadata (the method's over its
 * controller's), its path built as Nest builds it (global prefix, controller path, method path).
 */
export function controllerRoutes(modules: ModulesContainer, prefix: string): RouteEntry[] {
  const scanner = new MetadataScanner();
  const entries: RouteEntry[] = [];
  for (const module of modules.values()) {
    for (const wrapper of module.controllers.values()) {
      const type = wrapper.metatype as (new (...args: unknown[]) => unknown) | undefined;
      if (typeof type !== 'function') continue;
      const ctrlPaths = asArray(Reflect.getMetadata(PATH_METADATA, type) as string | string[] | undefined);
      const proto = type.prototype as Record<string, unknown>;
      for (const name of scanner.getAllMethodNames(proto)) {
        const handler = proto[name] as object;
        const methodPath = Reflect.getMetadata(PATH_METADATA, handler) as string | string[] | undefined;
        const verb = Reflect.getMetadata(METHOD_METADATA, handler) as RequestMethod | undefined;
        if (methodPath === undefined || verb === undefined) continue;
        const open =
          ((Reflect.getMetadata(IS_PUBLIC, handler) ?? Reflect.getMetadata(IS_PUBLIC, type)) as boolean | undefined) ===
          true;
        const limit = (Reflect.getMetadata(BODY_LIMIT, handler) ?? Reflect.getMetadata(BODY_LIMIT, type)) as
          number | undefined;
        const members = (Reflect.getMetadata(JSON_MEMBERS_LIMIT, handler) ??
          Reflect.getMetadata(JSON_MEMBERS_LIMIT, type)) as number | undefined;
        const items = (Reflect.getMetadata(JSON_ITEMS_LIMIT, handler) ??
          Reflect.getMetadata(JSON_ITEMS_LIMIT, type)) as number | undefined;
        const metered = (Reflect.getMetadata(METERED, handler) as boolean | undefined) === true;
        for (const c of ctrlPaths) {
          for (const m of asArray(methodPath))
            entries.push({
              method: RequestMethod[verb],
              path: join(prefix, c, m),
              public: open,
              bodyLimit: limit,
              jsonMembers: members,
              jsonItems: items,
              ...(metered ? { metered } : {}),
            });
        }
      }
    }
  }
  return entries;
}

function asArray(v: string | string[] | undefined): string[] {
  if (v === undefined) return [''];
  return Array.isArray(v) ? v : [v];
}

/** A route of Express's router (router's Route): one path, its handlers by method. */
export interface ExpressRoute {
  path: unknown;
  methods: Record<string, boolean | undefined>;
  dispatch(req: unknown, res: unknown, done: (err?: unknown) => void): void;
}

/** A layer of Express's router stack: a route, or middleware when `route` is undefined. */
export interface ExpressLayer {
  route?: ExpressRoute;
  handle?: (...args: never[]) => unknown;
  match(path: string): unknown;
}

/** Characters that make a path-to-regexp 8 pattern more than a literal path (parameters, wildcards, groups). */
const PATTERN_SYNTAX = /[:*{}()[\]?+!\\]/;

/**
 * The routes of Express's stack that are the only layer Express's router would run for a request to
 * their path and method: routes with a literal path (no parameters) such that no other layer, before
 * or after, matches that path for that method (no middleware, no other route handling it; Nest applies
 * a MiddlewareConsumer's middleware as a route of its own). Error-handling middleware (four arguments,
 * run only after an error) and `fallback` (Nest's not-found handler, which every path reaches when no
 * route answers) are not counted. Keyed `METHOD path`, as the RouteTable names a request's route (its
 * pattern). A request the RouteTable finds on such a route is one Express's router would dispatch to
 * it, and to nothing else but the fallback: the patterns are Express's own and matched as its router
 * matches them (case-insensitive, an optional trailing slash), and any pattern that matches a case or
 * trailing-slash variant of a literal path matches the literal path too. HEAD (answered by GET routes)
 * and OPTIONS (Express's automatic answer) are left to Express's router.
 */
export function firstRoutes(stack: ExpressLayer[], fallback?: unknown): Map<string, ExpressRoute> {
  const counted = stack.filter((l) => l.route !== undefined || (l.handle !== fallback && (l.handle?.length ?? 0) < 4));
  const found = new Map<string, ExpressRoute>();
  for (const layer of counted) {
    const route = layer.route;
    if (route === undefined || typeof route.path !== 'string' || PATTERN_SYNTAX.test(route.path)) continue;
    const path = route.path;
    for (const [name, on] of Object.entries(route.methods)) {
      if (on !== true || name === '_all' || name === 'head' || name === 'options') continue;
      const shared = counted.some(
        (other) => other !== layer && matches(other, path) && (other.route === undefined || handles(other.route, name)),
      );
      if (!shared) found.set(`${name.toUpperCase()} ${path}`, route);
    }
  }
  return found;
}

function matches(layer: ExpressLayer, path: string): boolean {
  try {
    return layer.match(path) !== false;
  } catch {
    return true; // a layer that cannot tell is taken to match: the route stays with Express's router
  }
}

function handles(route: ExpressRoute, method: string): boolean {
  return route.methods._all === true || route.methods[method] === true;
}
