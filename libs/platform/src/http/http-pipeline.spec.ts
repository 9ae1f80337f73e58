import { Controller, Get, INestApplication, Injectable, Module, CanActivate } from '@nestjs/common';
import { APP_GUARD, NestFactory } from '@nestjs/core';
import { globalEnhancerNames } from '../framework-internals';
import { DIRECT_ROUTES_ACCOUNT_FOR, HttpPipeline } from './http-pipeline';

const wiring = (globalEnhancers: string[]) => ({
  express: () => undefined,
  prefix: '',
  edge: [],
  bodyReaders: [],
  errorResponder: () => undefined,
  globalEnhancers,
});

describe('HttpPipeline.wire', () => {
  it('refuses a global enhancer the direct routes do not account for (it would skip them silently)', () => {
    const pipeline = new HttpPipeline();
    pipeline.route({ method: 'POST', path: '/v1/things', handle: async () => undefined });
    expect(() => pipeline.wire(wiring(['DefaultDenyGuard', 'AuditGuard']))).toThrow(/global AuditGuard would not reach the direct routes \(POST \/v1\/things\)/);
  });

  it('accepts the enhancers it accounts for, and anything when there are no direct routes', () => {
    const withRoute = new HttpPipeline();
    withRoute.route({ method: 'GET', path: '/x', handle: async () => undefined });
    expect(() => withRoute.wire(wiring(Object.keys(DIRECT_ROUTES_ACCOUNT_FOR)))).not.toThrow();
    expect(() => new HttpPipeline().wire(wiring(['AuditGuard']))).not.toThrow();
  });
});

describe('globalEnhancerNames', () => {
  @Injectable()
  class AuditGuard implements CanActivate {
    canActivate(): boolean {
      return true;
    }
  }
  @Controller()
  class C {
    @Get() get(): string {
      return 'ok';
    }
  }
  @Module({ controllers: [C], providers: [{ provide: APP_GUARD, useClass: AuditGuard }] })
  class M {}

  let app: INestApplication;
  afterAll(() => app?.close());

  it('names APP_GUARD providers and useGlobal* enhancers by class', async () => {
    app = await NestFactory.create(M, { logger: false });
    class Stamp implements CanActivate {
      canActivate(): boolean {
        return true;
      }
    }
    app.useGlobalGuards(new Stamp());
    expect(globalEnhancerNames(app).sort()).toEqual(['AuditGuard', 'Stamp']);
  });
});
