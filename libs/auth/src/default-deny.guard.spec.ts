import { ForbiddenException, UnauthorizedException } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { DefaultDenyGuard } from './default-deny.guard';
import { IS_PUBLIC, REQUIRED_ROLES } from './decorators';
import { AuthLimiter, Authenticator } from './principal';

function contextFor(meta: Record<string, unknown>, req: any = { headers: {} }) {
  const handler = () => undefined;
  Reflect.defineMetadata(IS_PUBLIC, meta[IS_PUBLIC], handler);
  Reflect.defineMetadata(REQUIRED_ROLES, meta[REQUIRED_ROLES], handler);
  return {
    getType: () => 'http',
    getHandler: () => handler,
    getClass: () => class {},
    switchToHttp: () => ({ getRequest: () => req, getResponse: () => ({}) }),
  } as any;
}

describe('DefaultDenyGuard', () => {
  it("reads a route's metadata once per controller and handler: a handler inherited by two controllers keeps each one's", async () => {
    const handler = () => undefined;
    class Open {}
    class Closed {}
    Reflect.defineMetadata(IS_PUBLIC, true, Open);
    const reflector = new Reflector();
    const read = jest.spyOn(reflector, 'getAllAndOverride');
    const guard = new DefaultDenyGuard(reflector, { authenticate: async () => null });
    const ctx = (type: object) =>
      ({
        getType: () => 'http',
        getHandler: () => handler,
        getClass: () => type,
        switchToHttp: () => ({ getRequest: () => ({ headers: {} }), getResponse: () => ({}) }),
      }) as any;
    expect(guard.canActivate(ctx(Open))).toBe(true);
    expect(guard.canActivate(ctx(Open))).toBe(true);
    const reads = read.mock.calls.length;
    const closed = guard.canActivate(ctx(Closed));
    expect(closed).toBeInstanceOf(Promise);
    await expect(closed).rejects.toBeInstanceOf(UnauthorizedException);
    expect(read.mock.calls.length).toBeGreaterThan(reads);
    expect(guard.canActivate(ctx(Open))).toBe(true);
    expect(read.mock.calls.length).toBe(reads * 2);
  });

  const member = { id: '1', kind: 'member' as const, roles: ['member'] };
  const auth = (p: any): Authenticator => ({ authenticate: async () => p });

  it('refuses a route without @Public() when nobody is authenticated', async () => {
    const guard = new DefaultDenyGuard(new Reflector(), auth(null));
    await expect(guard.canActivate(contextFor({}))).rejects.toBeInstanceOf(UnauthorizedException);
  });

  it('refuses everything non-public when the app provides no authenticator', async () => {
    const guard = new DefaultDenyGuard(new Reflector());
    await expect(guard.canActivate(contextFor({}))).rejects.toBeInstanceOf(UnauthorizedException);
  });

  it('opens @Public() routes without asking the authenticator', async () => {
    const authenticate = jest.fn();
    const guard = new DefaultDenyGuard(new Reflector(), { authenticate });
    // Answered at once, no promise: nothing to wait for.
    expect(guard.canActivate(contextFor({ [IS_PUBLIC]: true }))).toBe(true);
    expect(authenticate).not.toHaveBeenCalled();
  });

  it('sets the principal and enforces roles', async () => {
    const req = { headers: {} } as any;
    const guard = new DefaultDenyGuard(new Reflector(), auth(member));
    await expect(guard.canActivate(contextFor({}, req))).resolves.toBe(true);
    expect(req.principal).toBe(member);
    await expect(guard.canActivate(contextFor({ [REQUIRED_ROLES]: ['admin'] }))).rejects.toBeInstanceOf(
      ForbiddenException,
    );
  });

  it('tells the limiter about refused and accepted callers, and checks its block before the credentials', async () => {
    const limiter: AuthLimiter = {
      before: jest.fn(),
      failed: jest.fn(async () => undefined),
      succeeded: jest.fn(async () => undefined),
    };
    await expect(
      new DefaultDenyGuard(new Reflector(), auth(null), limiter).canActivate(contextFor({})),
    ).rejects.toBeInstanceOf(UnauthorizedException);
    expect(limiter.failed).toHaveBeenCalledTimes(1);
    const throwing: Authenticator = {
      authenticate: async () => {
        throw new UnauthorizedException('bad token');
      },
    };
    await expect(
      new DefaultDenyGuard(new Reflector(), throwing, limiter).canActivate(contextFor({})),
    ).rejects.toBeInstanceOf(UnauthorizedException);
    expect(limiter.failed).toHaveBeenCalledTimes(2);
    await expect(
      new DefaultDenyGuard(new Reflector(), auth(member), limiter).canActivate(contextFor({})),
    ).resolves.toBe(true);
    expect(limiter.succeeded).toHaveBeenCalledWith(expect.anything(), expect.anything(), member);
    expect(limiter.before).toHaveBeenCalledTimes(3);

    const authenticate = jest.fn();
    const blocked: AuthLimiter = {
      ...limiter,
      before: () => {
        throw new Error('blocked');
      },
    };
    await expect(
      new DefaultDenyGuard(new Reflector(), { authenticate }, blocked).canActivate(contextFor({})),
    ).rejects.toThrow('blocked');
    expect(authenticate).not.toHaveBeenCalled();
  });

  it('reuses the principal of a request already authenticated (before its body was read): no second check or count, roles still enforced', async () => {
    const limiter: AuthLimiter = {
      before: jest.fn(),
      failed: jest.fn(async () => undefined),
      succeeded: jest.fn(async () => undefined),
    };
    const authenticate = jest.fn();
    const guard = new DefaultDenyGuard(new Reflector(), { authenticate }, limiter);
    const req = { headers: {}, principal: member } as any;
    // Answered at once, no promise.
    expect(guard.canActivate(contextFor({}, req))).toBe(true);
    expect(req.principal).toBe(member);
    expect(() =>
      guard.canActivate(contextFor({ [REQUIRED_ROLES]: ['admin'] }, { headers: {}, principal: member })),
    ).toThrow(ForbiddenException);
    expect(authenticate).not.toHaveBeenCalled();
    expect([limiter.before, limiter.failed, limiter.succeeded].map((f) => (f as jest.Mock).mock.calls.length)).toEqual([
      0, 0, 0,
    ]);
  });
});
