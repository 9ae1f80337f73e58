import { INestApplication, Logger as NestLogger } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { CorsOptions } from '@nestjs/common/interfaces/external/cors-options.interface';
import express from 'express';
import type { Server } from 'node:http';
import { Logger } from 'nestjs-pino';
import { ModulesContainer } from '@nestjs/core';
import type { Request } from 'express';
import { AUTH_LIMITER, AUTHENTICATOR, AuthLimiter, Authenticator, Principal } from '@app/auth';
import { BaseConfig } from '../config/base.config';
import { AccessLog } from '../logging/logging';
import { Metrics } from '../metrics/metrics';
import { setupSwagger, SwaggerOptions } from '../swagger/setup-swagger';
import { MAX_JSON_ITEMS, MAX_JSON_MEMBERS, rejectJsonShape } from './json-depth';
import { bodyReader, ErrorResponder } from './body-reader';
import { BodyArrival } from './body-arrival';
import { BodyBudget } from './body-budget';
import { clientLimitKey } from '../rate-limit/address-limit-key';
import { edgeStages } from './edge-stages';
import { PlatformExpressAdapter } from './express-adapter';
import { HttpPipeline, Middleware } from './http-pipeline';
import { AuthenticateFirst, authenticateFirst } from './authenticate-first';
import {
  controllerRoutes,
  ExpressLayer,
  ExpressRoute,
  firstRoutes,
  pathnameOf,
  RouteEntry,
  RouteInfo,
  RouteTable,
} from './route-table';

export interface HttpAppOptions {
  config: BaseConfig;
  /** Global route prefix (membership CONTEXT_PATH); empty for none. */
  prefix?: string;
  swagger: SwaggerOptions;
  /** Writes errors raised outside Nest's filters (edge stages, body readers) in the app's error shape. */
  errorResponder: ErrorResponder;
  /** The app's own global behaviours, run after the platform's edge stages for every request (e.g. the gateway's timing). */
  edge?: Middleware[];
  /** Authenticate every request not to a `@Public()` route before its body is read (authenticate-first.ts). */
  authenticateFirst?: AuthenticateFirst;
}

export function normalizePrefix(prefix?: string): string {
  const trimmed = (prefix ?? '').trim().replace(/^\/+|\/+$/g, '');
  return trimmed ? `/${trimmed}` : '';
}

/**
 * What both apps do to an HTTP app before listening: logs, proxies, the one request pipeline (edge
 * stages for every request: request id, security headers, access log, metrics, CORS, the app's own,
 * authenticate-first; then Express and Nest), bodies, Swagger.
 */
export function configureHttpApp(app: NestExpressApplication, options: HttpAppOptions): void {
  const { config } = options;
  app.useLogger(app.get(Logger));
  app.flushLogs();
  app.disable('x-powered-by');
  app.set('trust proxy', parseTrustProxy(config.TRUST_PROXY));
  app.set('etag', false);
  const origins = config.corsOrigins();
  const corsStage: Middleware | undefined = origins.length
    ? cors({
        origin: origins.includes('*') ? true : origins,
        credentials: !origins.includes('*'),
        exposedHeaders: ['X-Request-Id', 'Retry-After', 'Content-Disposition'],
        maxAge: 600,
      })
    : undefined;
  const prefix = normalizePrefix(options.prefix);
  const pipeline = app.get(HttpPipeline);
  // Which route a request goes to, known before Express routes it: built from the controllers' metadata
  // (and Swagger's routes) at the first request, when every module is initialised.
  let swaggerRoutes: RouteEntry[] = [];
  let table: RouteTable | undefined;
  const routeOf = (method: string | undefined, path: string) => {
    table ??= new RouteTable([...controllerRoutes(app.get(ModulesContainer), prefix), ...swaggerRoutes]);
    return table.find(method, path);
  };
  // A request's route: authenticate-first has found it already (a request it let through); else looked up here.
  const routeInfoOf = (req: Request): RouteInfo | undefined =>
    (req as Request & { routeInfo?: RouteInfo }).routeInfo ?? routeOf(req.method, pathnameOf(req.url));
  // A route open to strangers (or no route: a 404) reads small bodies; one behind credentials BODY_LIMIT_BYTES.
  const limitFor = (req: Request): number => {
    const route = routeInfoOf(req);
    return route?.bodyLimit ?? (route?.public === false ? config.BODY_LIMIT_BYTES : config.PUBLIC_BODY_LIMIT_BYTES);
  };
  // Forms: no route takes one compressed (browsers never compress them), so a compressed form is 415
  // instead of being inflated without the JSON reader's ratio cap.
  const formReaders = new Map<number, Middleware>();
  const formReader: Middleware = (req, res, next) => {
    // Most requests carry no form: no route lookup for them.
    if (!isForm(req.headers['content-type'])) return next();
    const limit = limitFor(req);
    let reader = formReaders.get(limit);
    if (reader === undefined)
      formReaders.set(
        limit,
        (reader = express.urlencoded({ limit, extended: true, parameterLimit: 1000, inflate: false }) as Middleware),
      );
    reader(req, res, next);
  };
  const server = app.getHttpServer();
  server.headersTimeout = Math.min(config.REQUEST_TIMEOUT_MS, 20_000);
  // Idle keep-alive connections are closed by the client or the load balancer in front (whose idle
  // timeouts are commonly 60 s), not by the app first: a request sent as the app closes the socket fails.
  server.keepAliveTimeout = 65_000;
  if (prefix) app.setGlobalPrefix(prefix);
  const authenticator = app.get<Authenticator | undefined>(AUTHENTICATOR, { strict: false });
  const limiter = app.get<AuthLimiter | undefined>(AUTH_LIMITER, { strict: false });
  const adapter = app.getHttpAdapter();
  const instance = adapter.getInstance() as ReturnType<typeof express>;
  const notFound = () => (adapter instanceof PlatformExpressAdapter ? adapter.notFoundHandler : undefined);
  // Express's routes a request's route (found by the table) can be handed to without Express's router.
  let first: Map<string, ExpressRoute> | undefined;
  const routeFor = (req: Request): ExpressRoute | undefined => {
    const info = routeInfoOf(req);
    if (info === undefined) return undefined;
    first ??= firstRoutes((instance.router as unknown as { stack: ExpressLayer[] }).stack, notFound());
    return first.get(`${req.method} ${info.pattern}`);
  };
  pipeline.wire({
    express: instance,
    route: routeFor,
    fallback: notFound,
    edge: [
      ...edgeStages({
        accessLog: app.get(AccessLog),
        metrics: app.get(Metrics),
        stallMs: config.REQUEST_TIMEOUT_MS,
        cors: corsStage,
      }),
      ...(options.edge ?? []),
      ...(options.authenticateFirst
        ? [authenticateFirst(options.authenticateFirst, routeOf, authenticator, limiter, config.REQUEST_TIMEOUT_MS)]
        : []),
      // Body readers: JSON bodies, and the request timeout for every body (a client that announces more body
      // than it sends, or trickles it, gets 408 instead of holding a socket); then forms.
      bodyReader({
        limit: limitFor,
        maxInflateRatio: config.BODY_INFLATE_RATIO_MAX,
        timeoutMs: config.REQUEST_TIMEOUT_MS,
        arrival: app.get(BodyArrival),
        budget: { bodies: app.get(BodyBudget), callerOf: (req) => bodyCallerOf(req, config.RATE_LIMIT_IPV6_PREFIX) },
        respond: options.errorResponder,
        // Depth and object members, before parsing: the route's own member limit, else MAX_JSON_MEMBERS.
        verify: (req, _res, buf) => {
          const route = routeInfoOf(req);
          rejectJsonShape(buf, route?.jsonMembers ?? MAX_JSON_MEMBERS, route?.jsonItems ?? MAX_JSON_ITEMS);
        },
      }),
      formReader,
    ],
    errorResponder: options.errorResponder,
  });
  if (adapter instanceof PlatformExpressAdapter) adapter.usePipeline(pipeline);
  swaggerRoutes = setupSwagger(app, options.swagger, prefix);
}

// `cors` is the package @nestjs/platform-express's enableCors uses; it ships no types of its own.
// eslint-disable-next-line @typescript-eslint/no-require-imports -- cors ships no types
const cors = require('cors') as (options: CorsOptions) => Middleware;

/**
 * Whom a body is counted for in the replica's BodyBudget: the principal authenticate-first found (its share: a
 * gateway key's project, else the principal), else the client's network (an IPv4 address, an IPv6 /64 by
 * RATE_LIMIT_IPV6_PREFIX), as upload admission counts strangers.
 */
export function bodyCallerOf(req: Request & { principal?: Principal }, ipv6Prefix: number): string {
  const principal = req.principal;
  return principal ? `caller:${principal.share ?? principal.id}` : `network:${clientLimitKey(req, ipv6Prefix)}`;
}

function parseTrustProxy(value: string): boolean | number | string {
  if (value === 'true') return true;
  if (value === 'false') return false;
  if (/^\d+$/.test(value)) return Number(value);
  return value;
}

/**
 * SIGTERM/SIGINT: stop accepting, let in-flight requests finish (up to the grace period, then cut the
 * rest), run the apps' shutdown hooks (ledger flush, database close), then `after` (embedded database).
 */
export function enableGracefulShutdown(app: INestApplication, graceMs: number, after?: () => Promise<void>): void {
  const log = new NestLogger('Shutdown');
  let closing = false;
  const stop = async (signal: string) => {
    if (closing) return;
    closing = true;
    log.log(`${signal} received: draining in-flight requests (grace ${graceMs} ms)`);
    const server = app.getHttpServer() as Server;
    const timer = setTimeout(() => server.closeAllConnections?.(), graceMs);
    timer.unref();
    try {
      await app.close();
      await after?.();
    } catch (e) {
      log.error(`shutdown error: ${e}`);
    } finally {
      clearTimeout(timer);
      process.exit(0);
    }
  };
  process.once('SIGTERM', () => void stop('SIGTERM'));
  process.once('SIGINT', () => void stop('SIGINT'));
}

/** Whether a Content-Type is a URL-encoded form (what express.urlencoded reads). */
function isForm(type: string | undefined): boolean {
  return type !== undefined && /^\s*application\/x-www-form-urlencoded\s*(;|$)/i.test(type);
}
