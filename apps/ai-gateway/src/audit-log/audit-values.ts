import type { ApiKey } from '../keys/api-key.entity';
import { limitFieldValues } from '../limits/limit-fields';
import type { Project } from '../projects/project.entity';

/**
 * What the audit log keeps of a key or project before and after a change, in the names and types the
 * admin API answers with (ApiKeyResponse, ProjectResponse: snake_case, yuan as numbers), so an operator
 * reads a row as they read the API. Never the key's hash or secret. The limit fields are the answers'
 * (limitFieldValues), without the live budget usage.
 */
export function keyAuditValues(k: ApiKey): Record<string, unknown> {
  return {
    name: k.name,
    prefix: k.prefix,
    project_id: k.projectId,
    scopes: k.scopes,
    models: k.models,
    ...limitFieldValues(k.limits),
    expires_at: k.expiresAt ? k.expiresAt.toISOString() : null,
    revoked_at: k.revokedAt ? k.revokedAt.toISOString() : null,
  };
}

export function projectAuditValues(p: Project): Record<string, unknown> {
  return { name: p.name, ...limitFieldValues(p.limits) };
}
