import { INestApplication, Logger as NestLogger } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import helmet from 'helmet';
import { Logger } from 'nestjs-pino';
import { BaseConfig } from '../config/base.config';
import { setupSwagger, SwaggerOptions } from '../swagger/setup-swagger';
import { rejectDeepJson } from './json-depth';
import { bodyTimeout, ErrorResponder } from './body-timeout';
import { HELMET_OPTIONS } from './security-headers';

export interface HttpAppOptions {
  config: BaseConfig;
  /** Global route prefix (membership CONTEXT_PATH); empty for none. */
  prefix?: string;
  swagger: SwaggerOptions;
  /** Writes errors raised before Nest's filters can (body timeouts) in the app's error shape. */
  errorResponder: ErrorResponder;
}

export function normalizePrefix(prefix?: string): string {
  const trimmed = (prefix ?? '').trim().replace(/^\/+|\/+$/g, '');
  return trimmed ? `/${trimmed}` : '';
}

/** What both apps do to an HTTP app before listening: logs, proxies, headers, CORS, bodies, Swagger. */
export function configureHttpApp(app: NestExpressApplication, options: HttpAppOptions): void {
  const { config } = options;
  app.useLogger(app.get(Logger));
  app.flushLogs();
  app.disable('x-powered-by');
  app.set('trust proxy', parseTrustProxy(config.TRUST_PROXY));
  app.set('etag', false);
  app.use(helmet(HELMET_OPTIONS));
  const origins = (config.CORS_ORIGINS ?? '').split(',').map((s) => s.trim()).filter(Boolean);
  if (origins.length) {
    app.enableCors({
      origin: origins.includes('*') ? true : origins,
      credentials: !origins.includes('*'),
      exposedHeaders: ['X-Request-Id', 'Retry-After', 'Content-Disposition'],
      maxAge: 600,
    });
  }
  // A client that announces more body than it sends (or trickles it) gets 408 instead of holding a socket.
  app.use(bodyTimeout(config.REQUEST_TIMEOUT_MS, options.errorResponder));
  app.useBodyParser('json', { limit: config.BODY_LIMIT_BYTES, verify: rejectDeepJson });
  app.useBodyParser('urlencoded', { limit: config.BODY_LIMIT_BYTES, extended: true, parameterLimit: 1000 });
  const server = app.getHttpServer();
  server.headersTimeout = Math.min(config.REQUEST_TIMEOUT_MS, 20_000);
  const prefix = normalizePrefix(options.prefix);
  if (prefix) app.setGlobalPrefix(prefix);
  setupSwagger(app, options.swagger, prefix);
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
    const server = app.getHttpServer();
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
