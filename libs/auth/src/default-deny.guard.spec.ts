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
    await expect(guard.canActivate(contextFor({ [IS_PUBLIC]: true }))).resolves.toBe(true);
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
    await expect(guard.canActivate(contextFor({}, req))).resolves.toBe(true);
    expect(req.principal).toBe(member);
    await expect(
      guard.canActivate(contextFor({ [REQUIRED_ROLES]: ['admin'] }, { headers: {}, principal: member })),
    ).rejects.toBeInstanceOf(ForbiddenException);
    expect(authenticate).not.toHaveBeenCalled();
    expect([limiter.before, limiter.failed, limiter.succeeded].map((f) => (f as jest.Mock).mock.calls.length)).toEqual([
      0, 0, 0,
    ]);
  });
});
