/** Who made a change: a member (membership's admins are members too), the gateway's ADMIN_TOKEN, a CLI run, or the app itself. */
export type AuditActorKind = 'member' | 'admin-token' | 'cli' | 'system';
export const AUDIT_ACTOR_KINDS: AuditActorKind[] = ['member', 'admin-token', 'cli', 'system'];

export interface AuditActor {
  kind: AuditActorKind;
  /** The member id, the CLI's operating-system user, or null (the admin token, the system). */
  id: string | null;
}

/** What the edge knows of a request that changes something: read once per request (see audit-request.decorator.ts). */
export interface AuditContext {
  actor: AuditActor;
  requestId: string | null;
  address: string | null;
}

/** One row of the audit log. `before`/`after` are scrubbed of secret fields before they are stored (audit-scrub.ts). */
export interface AuditEntry extends AuditContext {
  /** `<target type>.<verb>`: key.created, project.updated, site_config.updated, member.login_locked... */
  action: string;
  target: { type: string; id: string | null };
  before?: unknown;
  after?: unknown;
}

/** The context of a change made by the app itself (the delivery worker disabling an endpoint, a lockout). */
export function systemContext(requestId: string | null = null, address: string | null = null): AuditContext {
  return { actor: { kind: 'system', id: null }, requestId, address };
}

/** The context of a CLI run (npm run keys, npm run admin:create): the operating-system user who ran it. */
export function cliContext(user: string | null): AuditContext {
  return { actor: { kind: 'cli', id: user }, requestId: null, address: null };
}
