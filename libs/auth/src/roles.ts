/** Operator roles of both apps: `admin` may do everything, `viewer` read every admin GET and write nothing. */
export const ADMIN_ROLE = 'admin';
export const VIEWER_ROLE = 'viewer';
export const OPERATOR_ROLES: readonly string[] = [ADMIN_ROLE, VIEWER_ROLE];

/**
 * A principal's roles with the ones they imply: an admin is also a viewer, so an admin read route says
 * `@Roles('viewer')` and a write `@Roles('admin')` (the guard demands every listed role).
 */
export function withImpliedRoles(roles: readonly string[]): string[] {
  return roles.includes(ADMIN_ROLE) && !roles.includes(VIEWER_ROLE) ? [...roles, VIEWER_ROLE] : [...roles];
}
