import {
  CanActivate,
  ExecutionContext,
  ForbiddenException,
  Inject,
  Injectable,
  Optional,
  UnauthorizedException,
} from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Request, Response } from 'express';
import { IS_PUBLIC, REQUIRED_ROLES } from './decorators';
import { RouteMetadataCache } from './route-metadata';
import { AUTH_LIMITER, AUTHENTICATOR, AuthLimiter, Authenticator, holdOf, Principal } from './principal';

/** Global guard: a route needs an authenticated caller unless it is marked `@Public()`. */
@Injectable()
export class DefaultDenyGuard implements CanActivate {
  /** Each route's `@Public()` and `@Roles()`. */
  private readonly access = new RouteMetadataCache((targets) => ({
    open: this.reflector.getAllAndOverride<boolean>(IS_PUBLIC, targets) === true,
    roles: this.reflector.getAllAndOverride<string[]>(REQUIRED_ROLES, targets) ?? ([] as readonly string[]),
  }));

  constructor(
    private readonly reflector: Reflector,
    @Optional() @Inject(AUTHENTICATOR) private readonly authenticator?: Authenticator,
    @Optional() @Inject(AUTH_LIMITER) private readonly limiter?: AuthLimiter,
  ) {}

  /** Answered at once when the route is public or its caller was authenticated before its body was read. */
  canActivate(context: ExecutionContext): boolean | Promise<boolean> {
    if (context.getType() !== 'http') return true;
    const access = this.access.of(context);
    if (access.open) return true;
    const req = context.switchToHttp().getRequest<Request & { principal?: Principal }>();
    if (req.principal !== undefined) return allowed(req.principal, access.roles);
    return authenticateRequest(
      req,
      context.switchToHttp().getResponse<Response>(),
      this.authenticator,
      this.limiter,
    ).then((principal) => {
      req.principal = principal;
      return allowed(principal, access.roles);
    });
  }
}

function allowed(principal: Principal, roles: readonly string[]): true {
  if (roles.some((r) => !principal.roles.includes(r))) throw new ForbiddenException('Not allowed');
  return true;
}

/**
 * Who is calling, or a 401 (429 when the address or principal is over its limit): the credentials check
 * of every authenticated route. A request already authenticated before its body was read
 * (libs/platform/src/http/authenticate-first.ts) keeps its principal: checked and counted by the limiters once.
 */
export async function authenticateRequest(
  req: Request & { principal?: Principal },
  res: Response,
  authenticator?: Authenticator,
  limiter?: AuthLimiter,
): Promise<Principal> {
  if (req.principal !== undefined) return req.principal;
  limiter?.before(req, res);
  let principal: Principal | null;
  try {
    principal = authenticator ? await authenticator.authenticate(req) : null;
  } catch (e) {
    // Refused credentials count against the client address (brute force, key guessing); then the refusal
    // waits as long as its authenticator asked (answerAfter), unless the count refused the address first.
    if (limiter && isAuthFailure(e)) await limiter.failed(req, res);
    await holdOf(e)?.();
    throw e;
  }
  if (!principal) {
    await limiter?.failed(req, res);
    throw new UnauthorizedException('Authentication required');
  }
  await limiter?.succeeded(req, res, principal);
  return principal;
}

function isAuthFailure(e: unknown): boolean {
  const err = e as { getStatus?: () => unknown; status?: unknown } | null | undefined;
  const status = typeof err?.getStatus === 'function' ? err.getStatus() : err?.status;
  return status === 401 || status === 403;
}
