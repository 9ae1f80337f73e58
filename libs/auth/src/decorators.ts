import { applyDecorators, createParamDecorator, ExecutionContext, SetMetadata } from '@nestjs/common';
import { ApiSecurity } from '@nestjs/swagger';
import type { Principal } from './principal';

export const IS_PUBLIC = 'auth:public';
export const REQUIRED_ROLES = 'auth:roles';

/**
 * Opens a route on purpose: everything else needs credentials. Its OpenAPI operation says so with the
 * empty security requirement (`security: [{}]`, no credential needed), which overrides the documents'
 * global bearer requirement (libs/platform/src/swagger/setup-swagger.ts) and which Swagger UI shows
 * without a lock.
 */
export const Public = () => applyDecorators(SetMetadata(IS_PUBLIC, true), ApiSecurity({}));

/** The caller must hold every listed role. */
export const Roles = (...roles: string[]) => SetMetadata(REQUIRED_ROLES, roles);

/** The authenticated caller of the request. */
export const CurrentPrincipal = createParamDecorator((_: unknown, ctx: ExecutionContext): Principal | undefined => {
  return ctx.switchToHttp().getRequest<{ principal?: Principal }>().principal;
});

/** Reads the Bearer token of an Authorization header, or null. */
export function bearerToken(req: { headers: Record<string, unknown> }): string | null {
  const header = req.headers?.authorization;
  if (typeof header !== 'string') return null;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return m ? m[1] : null;
}
