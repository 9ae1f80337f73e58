import { randomUUID } from 'crypto';
import type { IncomingMessage, ServerResponse } from 'http';
import { LoggerModule } from 'nestjs-pino';
import { BaseConfig } from '../config/base.config';

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Echoes a sane X-Request-Id or makes one, and returns it on the response. */
export function requestId(req: IncomingMessage, res: ServerResponse): string {
  const given = req.headers['x-request-id'];
  const id = typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
  res.setHeader('X-Request-Id', id);
  return id;
}

/** Paths that must never reach a log line. */
export const REDACTED_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'req.headers["x-api-key"]',
  'res.headers["set-cookie"]',
  '*.password',
  '*.oldPassword',
  '*.newPassword',
  '*.token',
  '*.refreshToken',
  '*.code',
  '*.api_key',
  '*.apiKey',
  '*.clientSecret',
  '*.secret',
];

/** Structured JSON logs with a request id per request; query strings are dropped from logged URLs. */
export function loggingModule(config: BaseConfig, app: string) {
  return LoggerModule.forRoot({
    pinoHttp: {
      level: config.LOG_LEVEL,
      base: { app },
      genReqId: requestId,
      redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
      autoLogging: { ignore: (req) => (req.url ?? '').includes('/actuator/') },
      customLogLevel: (_req, res, err) => (err || res.statusCode >= 500 ? 'error' : res.statusCode >= 400 ? 'warn' : 'info'),
      serializers: {
        req: (req: any) => ({ id: req.id, method: req.method, url: String(req.url ?? '').split('?')[0], remoteAddress: req.remoteAddress }),
        res: (res: any) => ({ statusCode: res.statusCode }),
      },
    },
  });
}
