import { BadRequestException, Global, Inject, Injectable, Logger, Module, ValidationPipe } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { IncomingMessage, Server, ServerResponse } from 'http';
import { performance } from 'perf_hooks';
import { AUTH_LIMITER, AuthLimiter, Principal } from '@app/auth';
import { openAiValidationPipe, sendOpenAiError } from '@app/envelope';
import { AccessLog, asExpress, expressClientIp, Metrics, pickRequestId, rejectDeepJson, securityHeaders } from '@app/platform';
import { GatewayConfig } from '../config/gateway.config';
import { GatewayAuthenticator, rateLimitHeaders } from '../keys/gateway.authenticator';
import { KeysModule } from '../keys/keys.module';
import { OVERHEAD_HEADER } from './gateway-timing';
import { applyDeferredHeaders, deferHeaders, sendJson } from './json-response';

/** A hot `POST /v1/...` endpoint served without the Express router and Nest's per-request pipeline. */
export interface LeanRoute {
  /** Exact request path (no query string), e.g. `/v1/chat/completions`. */
  path: string;
  /** The controller's body DTO: validated with the same pipe as the Nest route. */
  dto: new () => object;
  /** The route's own validation when the DTO alone is not it (chat: unknown fields policy); the Nest route uses the same function. */
  validate?: (body: unknown) => Promise<object>;
  /** Conservative fast check (routing/quick-accept.ts): true only for bodies the DTO accepts; others go through the pipe. */
  accept?: (body: unknown) => boolean;
  /** Writes the answer itself, or returns a body sent as 200 JSON. Errors are answered in the OpenAI shape. */
  handle(principal: Principal, body: any, req: any, res: any): Promise<unknown>;
}

const JSON_TYPE = /^application\/json\s*(;\s*charset="?utf-8"?\s*)?$/i;

/**
 * body-parser's JSON parsing in strict mode (objects and arrays only, an empty body is `{}`), failing
 * with the BadRequestException Nest makes of body-parser's SyntaxError (same message).
 */
export function parseStrictJson(text: string): unknown {
  if (text.length === 0) return {};
  const first = /^[\x20\x09\x0a\x0d]*([^\x20\x09\x0a\x0d])/.exec(text)?.[1];
  try {
    if (first !== '{' && first !== '[') {
      // body-parser's createStrictSyntaxError: the message JSON.parse gives for the first character.
      const index = first === undefined ? -1 : text.indexOf(first);
      const partial = index === -1 ? '' : text.substring(0, index) + '#'.repeat(text.length - index);
      try {
        JSON.parse(partial);
      } catch (e) {
        throw new SyntaxError((e as Error).message.replace(/#+/g, (placeholder) => text.substring(index, index + placeholder.length)));
      }
      throw new SyntaxError('strict violation');
    }
    return JSON.parse(text);
  } catch (e) {
    throw new BadRequestException((e as Error).message);
  }
}

function bodyError(status: number, type: string, message: string, extra: Record<string, unknown> = {}): Error {
  return Object.assign(new Error(message), { status, statusCode: status, type, expose: true, ...extra });
}

/**
 * The gateway's hot path (`npm run bench`): API clients' chat and embeddings calls skip Express's
 * router and middleware chain and Nest's guards, pipes and filters, which cost several times the
 * proxying itself. What those layers do is done here, the same way and with the same code where it
 * exists: request id, helmet's headers, the blocked-address check, API-key authentication (rate
 * limit included), the JSON body limits (size, depth, REQUEST_TIMEOUT_MS), the validation pipe, the
 * OpenAI error shape, Prometheus metrics per route and the access log line.
 *
 * Anything unusual takes the full pipeline untouched, before a byte of the body is read: another
 * method or path, a query string, an `Origin` header (CORS), no `Authorization` header, a body that is
 * not `application/json` in UTF-8, a blocked address, and credentials that fail (so refused keys are
 * counted per address exactly as elsewhere). The Nest controllers stay the documented twins of these
 * routes (Swagger) and serve the requests that fall through.
 */
@Injectable()
export class LeanRoutes {
  private readonly routes = new Map<string, LeanRoute>();
  private readonly pipe: ValidationPipe = openAiValidationPipe();
  /** helmet's headers as one flat [name, value, ...] list (see deferHeaders). */
  private readonly flatHeaders = securityHeaders().flat();
  private readonly errors = new Logger('Errors');

  constructor(
    private readonly config: GatewayConfig,
    private readonly authenticator: GatewayAuthenticator,
    @Inject(AUTH_LIMITER) private readonly limiter: AuthLimiter,
    private readonly metrics: Metrics,
    private readonly accessLog: AccessLog,
  ) {}

  add(route: LeanRoute): void {
    this.routes.set(route.path, route);
  }

  /** Puts the lean routes in front of the app's Express handler on its HTTP server. */
  install(app: NestExpressApplication): void {
    const server: Server = app.getHttpServer();
    const express = app.getHttpAdapter().getInstance();
    const fallbacks = server.listeners('request') as Array<(req: IncomingMessage, res: ServerResponse) => void>;
    const pass = (req: IncomingMessage, res: ServerResponse) => {
      for (const listener of fallbacks) listener.call(server, req, res);
    };
    server.removeAllListeners('request');
    server.on('request', (req: IncomingMessage, res: ServerResponse) => {
      const route = this.match(req);
      if (!route) return pass(req, res);
      this.serve(route, req, res, express, pass).catch((e) => {
        this.errors.error({ err: e }, 'lean route failed');
        if (!res.headersSent) res.writeHead(500).end();
        else res.destroy();
      });
    });
  }

  private match(req: IncomingMessage): LeanRoute | undefined {
    if (req.method !== 'POST') return undefined;
    const route = this.routes.get(req.url ?? '');
    if (!route) return undefined;
    const h = req.headers;
    if (h.origin !== undefined || typeof h.authorization !== 'string') return undefined;
    const type = h['content-type'];
    if (type === undefined || !JSON_TYPE.test(type)) return undefined;
    if (h['content-encoding'] !== undefined && h['content-encoding'].toLowerCase() !== 'identity') return undefined;
    return route;
  }

  private async serve(route: LeanRoute, rawReq: IncomingMessage, rawRes: ServerResponse, express: any, pass: (req: IncomingMessage, res: ServerResponse) => void): Promise<void> {
    const started = performance.now();
    // Node's own request and response: Express's prototypes are put on them only for an error answer
    // (res.status().json()) or by Express itself when the full pipeline takes over (see plain-request.ts).
    const req: any = rawReq;
    const res: any = rawRes;
    req.ip = expressClientIp(rawReq, express);

    let principal: Principal | null;
    try {
      this.limiter.before(req, res);
      principal = await this.authenticator.authenticate(req);
    } catch {
      principal = null;
    }
    if (!principal || principal.kind !== 'api-key') {
      res.removeHeader('Retry-After');
      return pass(req, res); // the full pipeline answers (and counts the failure per address)
    }

    const id = pickRequestId(req);
    req.id = id;
    req.principal = principal;
    req.gatewayStartedAt = started;
    // The key's x-ratelimit-* headers (the full pipeline's authenticator sets them on its Express response).
    deferHeaders(res, [...this.flatHeaders, 'X-Request-Id', id, ...(rateLimitHeaders(req) ?? [])]);
    this.observe(route, req, res);
    try {
      await this.limiter.succeeded(req, res, principal);
      const raw = await this.readJson(req, res);
      const body = route.accept?.(raw) ? raw : route.validate ? await route.validate(raw) : await this.pipe.transform(raw, { type: 'body', metatype: route.dto, data: undefined });
      const result = await route.handle(principal, body, req, res);
      if (result !== undefined && !res.headersSent) sendJson(res, 200, result);
    } catch (e) {
      applyDeferredHeaders(res);
      if (!res.headersSent && !res.getHeader(OVERHEAD_HEADER)) res.setHeader(OVERHEAD_HEADER, (performance.now() - started).toFixed(2));
      asExpress(req, res, express);
      sendOpenAiError(e, req, res, this.errors);
    }
  }

  /** The body as body-parser's JSON parser would give it (strict, BODY_LIMIT_BYTES, depth limit), or its errors. */
  private readJson(req: any, res: any): Promise<unknown> {
    const limit = this.config.BODY_LIMIT_BYTES;
    const timeoutMs = this.config.REQUEST_TIMEOUT_MS;
    return new Promise((resolve, reject) => {
      const declared = req.headers['content-length'] === undefined ? undefined : Number(req.headers['content-length']);
      const tooLarge = () => bodyError(413, 'entity.too.large', 'request entity too large', { limit });
      const giveUp = (e: Error) => {
        cleanup();
        // What is left of the body is not read: the connection closes after the answer.
        res.setHeader('Connection', 'close');
        res.once('finish', () => req.socket?.destroy());
        reject(e);
      };
      const parts: Buffer[] = [];
      let size = 0;
      const timer = setTimeout(() => giveUp(bodyError(408, 'request.timeout', `Request body not received within ${timeoutMs} ms`)), timeoutMs);
      timer.unref();
      const onData = (chunk: Buffer) => {
        size += chunk.length;
        if (size > limit) return giveUp(tooLarge());
        parts.push(chunk);
      };
      const onEnd = () => {
        cleanup();
        const buf = parts.length === 1 ? parts[0] : Buffer.concat(parts, size);
        try {
          rejectDeepJson(req, res, buf);
          resolve(parseStrictJson(buf.toString('utf8')));
        } catch (e) {
          reject(e);
        }
      };
      const onAborted = () => giveUp(bodyError(400, 'request.aborted', 'Request aborted'));
      const cleanup = () => {
        clearTimeout(timer);
        req.off('data', onData);
        req.off('end', onEnd);
        req.off('aborted', onAborted);
        req.off('error', onAborted);
        req.pause();
      };
      if (declared !== undefined && declared > limit) return giveUp(tooLarge());
      req.on('data', onData);
      req.on('end', onEnd);
      req.on('aborted', onAborted);
      req.on('error', onAborted);
    });
  }

  /** Metrics by route pattern (as MetricsMiddleware counts them elsewhere) and the access log line. */
  private observe(route: LeanRoute, req: any, res: any): void {
    this.accessLog.watch(req, res, req.id, route.path);
    const start = process.hrtime.bigint();
    res.once('finish', () => {
      const labels = { method: 'POST', route: route.path, status: String(res.statusCode) };
      this.metrics.requests.inc(labels);
      this.metrics.duration.observe(labels, Number(process.hrtime.bigint() - start) / 1e9);
    });
  }
}

/** LeanRoutes for the controllers that register with it (chat completions, embeddings). */
@Global()
@Module({ imports: [KeysModule], providers: [LeanRoutes], exports: [LeanRoutes] })
export class LeanRoutesModule {}
