import { createParamDecorator, ExecutionContext } from '@nestjs/common';
import type { Principal } from '@app/auth';
import type { AuditActor, AuditContext } from './audit-entry';

/** The actor of an authenticated caller: the gateway's ADMIN_TOKEN, or a member (membership admins, console tokens). */
export function auditActorOf(principal: Principal | undefined): AuditActor {
  if (!principal) return { kind: 'system', id: null };
  if (principal.kind === 'admin') return { kind: 'admin-token', id: null };
  return { kind: 'member', id: principal.id };
}

/** The request's audit facts, read once at the edge: who (the principal), which request (X-Request-Id), from where (req.ip, per TRUST_PROXY). */
export function auditContextOf(req: {
  principal?: Principal;
  id?: unknown;
  ip?: string;
  socket?: { remoteAddress?: string };
}): AuditContext {
  return {
    actor: auditActorOf(req.principal),
    requestId: typeof req.id === 'string' ? req.id : null,
    address: req.ip ?? req.socket?.remoteAddress ?? null,
  };
}

/** A controller parameter: the AuditContext of the request, for a use case that records a change. */
export const AuditRequest = createParamDecorator((_: unknown, ctx: ExecutionContext): AuditContext =>
  auditContextOf(ctx.switchToHttp().getRequest()),
);
