// enableLeanRouteHandlers (framework-internals.ts): a route handler Nest builds runs the route's guards, parameter
// factories, pipes and response handling as Nest's own handler does, without Nest's promise per step; routes it
// does not cover (interceptors) keep Nest's handler. Fails loudly when a Nest upgrade changes what it relies on.
import {
  ArgumentMetadata,
  ArgumentsHost,
  Body,
  Catch,
  CallHandler,
  CanActivate,
  Controller,
  createParamDecorator,
  ExecutionContext,
  Get,
  Header,
  HttpCode,
  Injectable,
  Module,
  NestInterceptor,
  ParseIntPipe,
  PipeTransform,
  Post,
  Query,
  Res,
  UnauthorizedException,
  UseFilters,
  UseGuards,
  UseInterceptors,
  UsePipes,
} from '@nestjs/common';
import { APP_GUARD, BaseExceptionFilter, NestFactory } from '@nestjs/core';
import { isRejectedByPipes } from '@nestjs/core/router/rejected-by-pipes';
import { GuardsConsumer } from '@nestjs/core/guards/guards-consumer';
import { PipesConsumer } from '@nestjs/core/pipes/pipes-consumer';
import type { INestApplication } from '@nestjs/common';
import type { Response } from 'express';
import type { AddressInfo } from 'net';
import { map, Observable, of } from 'rxjs';
import { PlatformExpressAdapter } from './http/express-adapter';

/** What ran, in order, for the request being answered. */
const trail: string[] = [];

@Injectable()
class GlobalGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    trail.push(`global guard ${context.getClass().name}.${context.getHandler().name}`);
    return true;
  }
}
class AsyncGuard implements CanActivate {
  canActivate(): Promise<boolean> {
    trail.push('async guard');
    return Promise.resolve(true);
  }
}
class ObservableGuard implements CanActivate {
  canActivate(): Observable<boolean> {
    trail.push('observable guard');
    return of(true);
  }
}
class DenyGuard implements CanActivate {
  canActivate(): Promise<Observable<boolean>> {
    trail.push('deny guard');
    // A promise of an Observable: Nest takes the Observable's last value.
    return Promise.resolve(of(false));
  }
}
class ThrowingGuard implements CanActivate {
  canActivate(): boolean {
    throw new UnauthorizedException('not you');
  }
}
class Tag implements PipeTransform {
  constructor(private readonly name: string) {}
  transform(value: unknown, meta: ArgumentMetadata): unknown {
    trail.push(`${this.name} ${meta.type}`);
    return meta.type === 'custom' ? `${String(value)}+${this.name}` : value;
  }
}
class AsyncTag implements PipeTransform {
  transform(value: unknown, meta: ArgumentMetadata): Promise<unknown> {
    trail.push(`async ${meta.type}`);
    return Promise.resolve({ ...(value as object), piped: true });
  }
}
const Caller = createParamDecorator((data: string, ctx: ExecutionContext) => {
  trail.push('caller factory');
  return `${data}:${ctx.switchToHttp().getRequest<{ method: string }>().method}`;
});
class Wrap implements NestInterceptor {
  intercept(_ctx: ExecutionContext, next: CallHandler): Observable<unknown> {
    return next.handle().pipe(map((data: unknown) => ({ wrapped: data })));
  }
}

@Controller('lean')
@UsePipes(new Tag('controller pipe'))
class LeanController {
  @Get('value')
  @Header('X-Probe', 'yes')
  @UseGuards(AsyncGuard, ObservableGuard)
  value(@Query('n', ParseIntPipe) n: number, @Caller('who') who: string): object {
    trail.push('handler');
    return { n, who };
  }

  @Post('body')
  body(@Body(AsyncTag) body: object): Promise<object> {
    trail.push('handler');
    return Promise.resolve(body);
  }

  @Post('status')
  @HttpCode(202)
  status(): Observable<string> {
    return of('seen');
  }

  @Get('denied')
  @UseGuards(DenyGuard)
  denied(): string {
    trail.push('handler');
    return 'never';
  }

  @Get('own')
  own(@Res() res: Response): void {
    res.status(203).json({ own: true });
  }

  @Get('intercepted')
  @UseInterceptors(Wrap)
  intercepted(@Query('q') q: string): string {
    return q;
  }
}

const Later = createParamDecorator(() => Promise.resolve('later'));
const Throws = createParamDecorator(() => {
  throw new UnauthorizedException('no caller');
});
/** Resolves once `started` is called: a pipe that can only finish if another parameter's pipe runs meanwhile. */
let started!: () => void;
class WaitsForOther implements PipeTransform {
  transform(value: unknown): Promise<unknown> {
    return new Promise((resolve) => (started = () => resolve(value)));
  }
}
class StartsOther implements PipeTransform {
  transform(value: unknown): unknown {
    started();
    return value;
  }
}
class Mutates implements PipeTransform {
  transform(_value: unknown, meta: ArgumentMetadata): unknown {
    const seen = meta.data;
    (meta as { data?: unknown }).data = 'mutated';
    return seen;
  }
}
/** Whether the request of each error was marked as refused by its pipes (for upload interceptors). */
const refusedByPipes: boolean[] = [];
@Catch()
class RecordingFilter extends BaseExceptionFilter {
  catch(e: unknown, host: ArgumentsHost): void {
    refusedByPipes.push(isRejectedByPipes(host.switchToHttp().getRequest()));
    super.catch(e, host);
  }
}

@Controller('plain')
@UseFilters(RecordingFilter)
class PlainController {
  @Get('thenable')
  thenable(@Later() later: string): object {
    return { later };
  }

  @Get('first-failure')
  firstFailure(@Throws() who: string, @Query('n', ParseIntPipe) n: number): object {
    return { who, n };
  }

  @Post('side-by-side')
  sideBySide(@Query('q', StartsOther) q: string, @Body(WaitsForOther) body: object): object {
    return { q, body };
  }

  @Get('metadata')
  metadata(@Query('q', Mutates) seen: string): object {
    return { seen };
  }

  @Get('guard-throws')
  @UseGuards(ThrowingGuard)
  guardThrows(): string {
    return 'never';
  }
}

@Module({ controllers: [LeanController, PlainController], providers: [{ provide: APP_GUARD, useClass: GlobalGuard }] })
class LeanModule {}

describe('enableLeanRouteHandlers', () => {
  let app: INestApplication;
  let url: string;
  let plain: string;
  let nestGuards: jest.SpyInstance;
  let nestPipes: jest.SpyInstance;

  beforeAll(async () => {
    app = await NestFactory.create(LeanModule, new PlatformExpressAdapter(), { logger: false });
    await app.listen(0, '127.0.0.1');
    const origin = `http://127.0.0.1:${(app.getHttpServer().address() as AddressInfo).port}`;
    url = `${origin}/lean`;
    plain = `${origin}/plain`;
    nestGuards = jest.spyOn(GuardsConsumer.prototype, 'tryActivate');
    nestPipes = jest.spyOn(PipesConsumer.prototype, 'apply');
  });
  afterAll(() => app.close());
  beforeEach(() => {
    trail.length = 0;
    nestGuards.mockClear();
    nestPipes.mockClear();
  });

  it("runs the global, controller and method guards (sync, async, Observable), then each parameter's factory and pipes in Nest's order", async () => {
    const r = await fetch(`${url}/value?n=41`);
    expect(r.status).toBe(200);
    expect(r.headers.get('x-probe')).toBe('yes');
    // ParseIntPipe made a number of the query; the custom parameter went through the controller's pipe too.
    expect(await r.json()).toEqual({ n: 41, who: 'who:GET+controller pipe' });
    expect(trail).toEqual([
      'global guard LeanController.value',
      'async guard',
      'observable guard',
      // Parameters in the order of Nest's metadata (decorators apply from the last parameter), as Nest does.
      'caller factory',
      'controller pipe custom',
      'controller pipe query',
      'handler',
    ]);
    // Not through Nest's own consumers: the lean handler answered.
    expect(nestGuards).not.toHaveBeenCalled();
    expect(nestPipes).not.toHaveBeenCalled();
  });

  it("answers a pipe's refusal through the exception filters, before the handler runs", async () => {
    const r = await fetch(`${url}/value?n=forty`);
    expect(r.status).toBe(400);
    expect(await r.json()).toMatchObject({ statusCode: 400, message: expect.stringContaining('numeric') });
    expect(trail).not.toContain('handler');
  });

  it('refuses with 403 when a guard says no, before any parameter is read', async () => {
    const r = await fetch(`${url}/denied`);
    expect(r.status).toBe(403);
    expect(await r.json()).toEqual({ statusCode: 403, message: 'Forbidden resource', error: 'Forbidden' });
    expect(trail).toEqual(['global guard LeanController.denied', 'deny guard']);
  });

  it("awaits asynchronous pipes and handlers; POST answers 201 unless @HttpCode says otherwise; an Observable's value is sent", async () => {
    const r = await fetch(`${url}/body`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ a: 1 }),
    });
    expect(r.status).toBe(201);
    expect(await r.json()).toEqual({ a: 1, piped: true });
    expect(trail).toEqual(['global guard LeanController.body', 'controller pipe body', 'async body', 'handler']);
    const s = await fetch(`${url}/status`, { method: 'POST' });
    expect(s.status).toBe(202);
    expect(await s.text()).toBe('seen');
  });

  it('leaves the answer to a handler that takes the response', async () => {
    const r = await fetch(`${url}/own`);
    expect(r.status).toBe(203);
    expect(await r.json()).toEqual({ own: true });
  });

  it('awaits a thenable a parameter decorator gives, pipes or not', async () => {
    const r = await fetch(`${plain}/thenable`);
    expect(await r.json()).toEqual({ later: 'later' });
    expect(nestPipes).not.toHaveBeenCalled();
  });

  it("answers the failure Nest's Promise.all sees first: a parameter factory's before a pipe's; the request is marked refused by its pipes", async () => {
    refusedByPipes.length = 0;
    const r = await fetch(`${plain}/first-failure?n=bad`);
    expect(r.status).toBe(401);
    expect(await r.json()).toMatchObject({ message: 'no caller' });
    expect(refusedByPipes).toEqual([true]);
  });

  it("runs the parameters' pipes side by side: one waiting on another's is not a deadlock", async () => {
    const r = await fetch(`${plain}/side-by-side?q=x`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ b: 2 }),
    });
    expect(await r.json()).toEqual({ q: 'x', body: { b: 2 } });
  });

  it('gives each pipe call its own metadata: what one request changes, the next does not see', async () => {
    for (let i = 0; i < 2; i++) expect(await (await fetch(`${plain}/metadata?q=1`)).json()).toEqual({ seen: 'q' });
  });

  it('answers a guard that throws with its error; the request is not marked refused by pipes', async () => {
    refusedByPipes.length = 0;
    const r = await fetch(`${plain}/guard-throws`);
    expect(r.status).toBe(401);
    expect(await r.json()).toMatchObject({ message: 'not you' });
    expect(refusedByPipes).toEqual([false]);
  });

  it("keeps Nest's own handler for a route with an interceptor", async () => {
    const r = await fetch(`${url}/intercepted?q=x`);
    expect(r.status).toBe(200);
    expect(await r.json()).toEqual({ wrapped: 'x' });
    expect(trail).toEqual(['global guard LeanController.intercepted', 'controller pipe query']);
    expect(nestGuards).toHaveBeenCalledTimes(1);
    expect(nestPipes).toHaveBeenCalledTimes(1);
  });
});
