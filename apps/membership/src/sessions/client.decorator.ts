import { createParamDecorator, ExecutionContext } from '@nestjs/common';
import type { Request } from 'express';
import { auditContextOf } from '@app/audit';
import { localeOf } from '@app/envelope';
import { ClientFacts } from './client-facts';
import { clientIp, deviceName } from './client-info';

/** The client facts of a request, each read once (the address under TRUST_PROXY included). */
export function clientFactsOf(req: Request): ClientFacts {
  const userAgent = req.headers['user-agent'];
  const cookie = req.headers.cookie;
  const fetchSite = req.get('sec-fetch-site');
  return {
    ip: clientIp(req),
    userAgent,
    device: deviceName(userAgent),
    locale: localeOf(req),
    requestId: typeof req.id === 'string' ? req.id : null,
    audit: auditContextOf(req as Parameters<typeof auditContextOf>[0]),
    secure: req.secure,
    origin: `${req.protocol}://${req.get('host')}`,
    cookie: typeof cookie === 'string' ? cookie : undefined,
    fetchSite: typeof fetchSite === 'string' ? fetchSite : undefined,
  };
}

/** A controller parameter: the request's ClientFacts, for the use case it calls. */
export const Client = createParamDecorator((_: unknown, ctx: ExecutionContext): ClientFacts =>
  clientFactsOf(ctx.switchToHttp().getRequest<Request>()),
);
