import { CanActivate, ExecutionContext, ForbiddenException, Inject, Injectable, Optional, UnauthorizedException } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { IS_PUBLIC, REQUIRED_ROLES } from './decorators';
import { AUTHENTICATOR, Authenticator } from './principal';

/** Global guard: a route needs an authenticated caller unless it is marked `@Public()`. */
@Injectable()
export class DefaultDenyGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    @Optional() @Inject(AUTHENTICATOR) private readonly authenticator?: Authenticator,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    if (context.getType() !== 'http') return true;
    const targets = [context.getHandler(), context.getClass()];
    if (this.reflector.getAllAndOverride<boolean>(IS_PUBLIC, targets)) return true;
    const req = context.switchToHttp().getRequest();
    const principal = this.authenticator ? await this.authenticator.authenticate(req) : null;
    if (!principal) throw new UnauthorizedException('Authentication required');
    req.principal = principal;
    const roles = this.reflector.getAllAndOverride<string[]>(REQUIRED_ROLES, targets) ?? [];
    if (roles.some((r) => !principal.roles.includes(r))) throw new ForbiddenException('Not allowed');
    return true;
  }
}
