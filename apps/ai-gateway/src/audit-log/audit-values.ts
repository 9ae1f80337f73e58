import type { ApiKey } from '../keys/api-key.entity';
import type { LimitColumnsEmbed } from '../limits/limit-columns';
import type { Project } from '../projects/project.entity';

/**
 * What the audit log keeps of a key or project before and after a change, in the names and types the
 * admin API answers with (ApiKeyResponse, ProjectResponse: snake_case, yuan as numbers), so an operator
 * reads a row as they read the API. Never the key's hash or secret. The limit fields follow
 * apps/ai-gateway/src/limits/limit-fields.ts (LimitFields), without the live budget usage.
 */
export function keyAuditValues(k: ApiKey): Record<string, unknown> {
  return {
    name: k.name,
    prefix: k.prefix,
    project_id: k.projectId,
    scopes: k.scopes,
    models: k.models,
    ...limitValues(k.limits),
    expires_at: k.expiresAt ? k.expiresAt.toISOString() : null,
    revoked_at: k.revokedAt ? k.revokedAt.toISOString() : null,
  };
}

export function projectAuditValues(p: Project): Record<string, unknown> {
  return { name: p.name, ...limitValues(p.limits) };
}

function limitValues(l: LimitColumnsEmbed): Record<string, unknown> {
  return {
    requests_per_minute: l.requestsPerMinute,
    tokens_per_minute: l.tokensPerMinute,
    max_concurrent_requests: l.maxConcurrentRequests,
    model_limits: l.modelLimits,
    budget_yuan: l.budgetYuan === null ? null : Number(l.budgetYuan),
    budget_tokens: l.budgetTokens === null ? null : Number(l.budgetTokens),
    budget_period: l.budgetPeriod,
    alert_threshold: l.alertThreshold === null ? null : Number(l.alertThreshold),
  };
}
