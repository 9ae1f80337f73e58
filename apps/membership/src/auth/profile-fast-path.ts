import { Inject, Injectable, Logger, Optional } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { IncomingMessage, Server, ServerResponse } from 'http';
import { AUTH_LIMITER, AuthLimiter, Principal } from '@app/auth';
import { localeOf, msg, ok, sendEnvelopeError } from '@app/envelope';
import { AccessLog, asExpress, expressClientIp, Metrics, normalizePrefix, pickRequestId, securityHeaders } from '@app/platform';
import { MembershipConfig } from '../config/membership.config';
import { AuthController } from './auth.controller';
import { MemberAuthenticator } from './member.authenticator';

/** The route served here; the Nest route of AuthController.profile stays its documented twin. */
export const PROFILE_PATH = '/api/v1/app/auth/profile';

type Listener = (req: IncomingMessage, res: ServerResponse) => void;

/**
 * `GET /api/v1/app/auth/profile`, the members' most frequent call, served without Express's router and
 * middleware chain and Nest's guards, interceptors and filters: for a profile read they cost several
 * times the read itself (npm run bench --cpu-prof membership). What those layers do for this route is
 * done here with the same code: helmet's headers, the request id, the access log line and metrics,
 * the blocked-address check, MemberAuthenticator, the per-member rate limit, AuthController.profile,
 * the `{code, message, data}` envelope and the error envelope (sendEnvelopeError).
 *
 * Anything else takes the full pipeline untouched: another method or path (a query string, a trailing
 * slash), a request with a body or an `Origin` header, CORS configured, no `Authorization` header, a
 * blocked address, and credentials that fail (so refusals are answered and counted per address by the
 * global guard exactly as on every other route).
 */
@Injectable()
export class ProfileFastPath {
  private readonly headers = securityHeaders();
  // The same headers as one flat [name, value, ...] list for writeHead: one call instead of a setHeader each.
  private readonly flatHeaders = this.headers.flat();
  private readonly errors = new Logger('Errors');
  private readonly path: string;
  private readonly enabled: boolean;

  constructor(
    config: MembershipConfig,
    private readonly authenticator: MemberAuthenticator,
    private readonly metrics: Metrics,
    private readonly accessLog: AccessLog,
    @Optional() @Inject(AUTH_LIMITER) private readonly limiter?: AuthLimiter,
  ) {
    this.path = `${normalizePrefix(config.CONTEXT_PATH)}${PROFILE_PATH}`;
    // CORS adds headers to every answer (Vary, credentials): with CORS on, Express's cors middleware answers.
    this.enabled = !(config.CORS_ORIGINS ?? '').split(',').some((s) => s.trim());
  }

  /** Puts the fast path in front of the app's Express handler on its HTTP server. */
  install(app: NestExpressApplication): void {
    if (!this.enabled) return;
    const controller = app.get(AuthController);
    const server: Server = app.getHttpServer();
    const express = app.getHttpAdapter().getInstance();
    const fallbacks = server.listeners('request') as Listener[];
    const pass: Listener = (req, res) => {
      for (const listener of fallbacks) listener.call(server, req, res);
    };
    server.removeAllListeners('request');
    server.on('request', (req: IncomingMessage, res: ServerResponse) => {
      if (!this.matches(req)) return pass(req, res);
      this.serve(controller, req, res, express, pass).catch((e) => {
        this.errors.error({ err: e, requestId: (req as any).id }, 'profile fast path failed');
        if (!res.headersSent) res.writeHead(500).end();
        else res.destroy();
      });
    });
  }

  private matches(req: IncomingMessage): boolean {
    if (req.method !== 'GET' || req.url !== this.path) return false;
    const h = req.headers;
    if (typeof h.authorization !== 'string' || h.origin !== undefined) return false;
    // Conditional requests get Express's freshness check (If-None-Match: * answers 304 there).
    if (h['if-none-match'] !== undefined || h['if-modified-since'] !== undefined) return false;
    // A body (however odd on a GET) goes through the body parsers and their limits.
    return (h['content-length'] === undefined || h['content-length'] === '0') && h['transfer-encoding'] === undefined;
  }

  private async serve(controller: AuthController, rawReq: IncomingMessage, rawRes: ServerResponse, express: any, pass: Listener): Promise<void> {
    // Node's own request and response: Express's prototypes are put on them only for an error answer
    // (res.status().json()) or by Express itself when the full pipeline takes over (see plain-request.ts).
    const req: any = rawReq;
    const res: any = rawRes;
    req.ip = expressClientIp(rawReq, express);

    let principal: Principal | null;
    try {
      this.limiter?.before(req, res);
      principal = await this.authenticator.authenticate(req);
    } catch {
      principal = null;
    }
    if (!principal) {
      res.removeHeader('Retry-After');
      return pass(req, res); // the full pipeline answers, and counts the failure per address
    }

    const id: string = (req.id ||= pickRequestId(req));
    this.accessLog.watch(req, res, id, this.path);
    this.observe(res);
    req.principal = principal;
    try {
      await this.limiter?.succeeded(req, res, principal);
      // What res.json() sends with the app's settings (no replacer, spaces or escaping; ETag off),
      // after helmet's headers and X-Request-Id as the pipeline sets them.
      const locale = localeOf(req);
      const body = JSON.stringify(ok(await controller.profile(principal), msg('success').render(locale)));
      res.writeHead(200, [
        ...this.flatHeaders,
        'X-Request-Id', id,
        // As EnvelopeInterceptor marks an envelope (its message follows Accept-Language).
        'Content-Language', locale,
        'Vary', 'Accept-Language',
        'Content-Type', 'application/json; charset=utf-8',
        'Content-Length', String(Buffer.byteLength(body)),
      ]);
      res.end(body);
    } catch (e) {
      if (!res.headersSent) {
        for (const [name, value] of this.headers) res.setHeader(name, value);
        res.setHeader('X-Request-Id', id);
      }
      asExpress(req, res, express);
      sendEnvelopeError(e, req, res, this.errors);
    }
  }

  /** http_requests_total and the latency histogram under the route's pattern, as MetricsMiddleware counts them. */
  private observe(res: ServerResponse): void {
    const start = process.hrtime.bigint();
    res.once('finish', () => {
      const labels = { method: 'GET', route: this.path, status: String(res.statusCode) };
      this.metrics.requests.inc(labels);
      this.metrics.duration.observe(labels, Number(process.hrtime.bigint() - start) / 1e9);
    });
  }
}
