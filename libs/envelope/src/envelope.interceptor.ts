import { CallHandler, ExecutionContext, Injectable, NestInterceptor, StreamableFile } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { map, Observable } from 'rxjs';
import { ok } from './envelope';
import { localeOf, markLanguage, msg } from './i18n';

export const RAW_RESPONSE = 'envelope:raw';

/** Wraps every controller result in `{code:200,message:'success',data}` (message in the request's language) unless the route opts out. */
@Injectable()
export class EnvelopeInterceptor implements NestInterceptor {
  constructor(private readonly reflector: Reflector) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    if (context.getType() !== 'http') return next.handle();
    const raw = this.reflector.getAllAndOverride<boolean>(RAW_RESPONSE, [context.getHandler(), context.getClass()]);
    if (raw) return next.handle();
    const http = context.switchToHttp();
    return next
      .handle()
      .pipe(
        map((data) =>
          data instanceof StreamableFile ? data : okEnvelope(data, http.getRequest(), http.getResponse()),
        ),
      );
  }
}

/** A result as the success envelope, its message in the request's language (marked on the response). */
export function okEnvelope<T>(
  data: T,
  req: { headers?: Record<string, string | string[] | undefined> },
  res: Parameters<typeof markLanguage>[0],
) {
  const locale = localeOf(req);
  markLanguage(res, locale);
  return ok(data, msg('success').render(locale));
}
