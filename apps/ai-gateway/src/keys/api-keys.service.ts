import { Injectable } from '@nestjs/common';
import type { AuditContext } from '@app/audit';
import { GatewayError, GatewayErrorCode } from '../errors';
import { GatewayConfig } from '../config/gateway.config';
import { ApiKey } from './api-key.entity';
import { generateKeySecret, hashKey, looksLikeKey } from './api-key-secret';
import { ApiKeyChanges, ApiKeysRepository } from './api-keys.repository';
import { ApiKeyResponse, CreateApiKeyRequest, CreatedApiKeyResponse, UpdateApiKeyRequest } from './dtos/api-key.dto';
import type { LimitFieldsResponse } from '../limits/dtos/limit-fields.dto';
import { limitChanges, LimitFields } from '../limits/limit-fields';

const MAX_CACHED = 10_000;

interface CachedKey {
  key: Promise<ApiKey | null>;
  until: number;
}

/** Issues, changes and revokes keys; resolves a presented key to its record (briefly cached). */
@Injectable()
export class ApiKeysService {
  /** presented secret -> its record until `until`; per replica, so kept short. Keys found only. */
  private readonly cache = new Map<string, CachedKey>();
  /**
   * Lookups under way and secrets found to be no key, apart from `cache` and bounded on their own: strangers
   * presenting made-up keys fill and clear this map, never the one real keys are answered from.
   */
  private readonly misses = new Map<string, CachedKey>();
  /** Bumped by forgetAll: a lookup begun before a key changed caches nothing. */
  private generation = 0;

  constructor(
    private readonly keys: ApiKeysRepository,
    private readonly config: GatewayConfig,
    private readonly limitFields: LimitFields,
  ) {}

  async create(req: CreateApiKeyRequest, ctx: AuditContext): Promise<CreatedApiKeyResponse> {
    const secret = generateKeySecret();
    const changes = await this.changesOf(req);
    const key = await this.keys
      .insert({ name: req.name, prefix: secret.prefix, keyHash: secret.hash, ...changes }, ctx)
      .catch(projectGone(req.project_id));
    return { ...(await this.answer([key]))[0], key: secret.key };
  }

  async list(opts: {
    includeRevoked: boolean;
    limit: number;
    offset: number;
    q?: string;
    projectId?: string;
  }): Promise<{ object: 'list'; data: ApiKeyResponse[]; total: number }> {
    const [rows, total] = await this.keys.list(opts);
    return { object: 'list', data: await this.answer(rows), total };
  }

  async get(id: string): Promise<ApiKeyResponse> {
    return (await this.answer([await this.mustFind(id)]))[0];
  }

  async update(id: string, req: UpdateApiKeyRequest, ctx: AuditContext): Promise<ApiKeyResponse> {
    await this.mustFind(id);
    const key = await this.keys.update(id, await this.changesOf(req), ctx).catch(projectGone(req.project_id));
    this.forgetAll();
    return (await this.answer([key!]))[0];
  }

  async revoke(id: string, ctx: AuditContext): Promise<ApiKeyResponse> {
    await this.mustFind(id);
    const key = await this.keys.revoke(id, ctx);
    // Other replicas drop it when their cache entry expires (AI_KEY_CACHE_TTL_MS).
    this.forgetAll();
    return (await this.answer([key!]))[0];
  }

  /**
   * A new secret for the key, shown in this answer only; the old one is refused at once on this replica and
   * within AI_KEY_CACHE_TTL_MS on the others. A revoked key cannot be rotated (409).
   */
  async rotate(id: string, ctx: AuditContext): Promise<CreatedApiKeyResponse> {
    await this.mustFind(id);
    const secret = generateKeySecret();
    const key = (await this.keys.rotate(id, { prefix: secret.prefix, keyHash: secret.hash }, ctx))!;
    if (key.revokedAt) throw new GatewayError(GatewayErrorCode.ApiKeyNotRotatable, { id });
    this.forgetAll();
    return { ...(await this.answer([key]))[0], key: secret.key };
  }

  /** Drops this replica's cached keys, whose project limits changed (projects/projects.service.ts); others expire theirs within AI_KEY_CACHE_TTL_MS. */
  forgetCached(): void {
    this.forgetAll();
  }

  countUsable(): Promise<number> {
    return this.keys.countUsable();
  }

  /** The active key for a presented secret; throws 401 `invalid_api_key` otherwise. */
  async resolve(presented: string): Promise<ApiKey> {
    const unknown = () => new GatewayError(GatewayErrorCode.ApiKeyIncorrect, { redacted: redact(presented) });
    if (!looksLikeKey(presented)) throw unknown();
    const now = Date.now();
    // Keyed by the presented secret (held only in this process's memory, as the request itself is):
    // a hit needs no sha256 on the proxied call's path (npm run bench --cpu-prof ai-gateway).
    let entry = this.cache.get(presented) ?? this.misses.get(presented);
    if (!entry || entry.until <= now) {
      // Concurrent requests with the same key share one lookup; a failed lookup is not cached.
      const lookup = this.keys.findByHash(hashKey(presented));
      const looked: CachedKey = { key: lookup, until: now + this.config.AI_KEY_CACHE_TTL_MS };
      const generation = this.generation;
      entry = looked;
      if (this.misses.size >= MAX_CACHED) this.misses.clear();
      this.misses.set(presented, looked);
      lookup.then(
        (found) => {
          if (this.misses.get(presented) === looked) this.misses.delete(presented);
          // Not when a key changed meanwhile (forgetAll): the record may predate the change.
          if (!found || generation !== this.generation) return;
          if (this.cache.size >= MAX_CACHED) this.cache.clear();
          this.cache.set(presented, looked);
        },
        () => {
          if (this.misses.get(presented) === looked) this.misses.delete(presented);
        },
      );
    }
    const key = await entry.key;
    if (!key) throw unknown();
    if (key.revokedAt) throw new GatewayError(GatewayErrorCode.ApiKeyRevoked);
    if (key.expiresAt && key.expiresAt.getTime() <= now) throw new GatewayError(GatewayErrorCode.ApiKeyExpired);
    return key;
  }

  /** After any key changed: this replica answers no key from before the change. */
  private forgetAll(): void {
    this.generation++;
    this.cache.clear();
    this.misses.clear();
  }

  private async mustFind(id: string): Promise<ApiKey> {
    const key = /^[0-9a-f-]{36}$/i.test(id) ? await this.keys.findById(id) : null;
    if (!key) throw new GatewayError(GatewayErrorCode.ApiKeyNotFound, { id });
    return key;
  }

  private async changesOf(req: CreateApiKeyRequest | UpdateApiKeyRequest): Promise<ApiKeyChanges> {
    const c: ApiKeyChanges = { limits: limitChanges(req) };
    if (req.name !== undefined) c.name = req.name;
    if (req.scopes !== undefined) c.scopes = req.scopes === null ? null : [...new Set(req.scopes)];
    if (req.models !== undefined) c.models = req.models === null ? null : [...new Set(req.models)];
    if (req.expires_at !== undefined) c.expiresAt = req.expires_at === null ? null : new Date(req.expires_at);
    if (req.project_id !== undefined) {
      if (req.project_id !== null && !(await this.keys.projectExists(req.project_id)))
        throw new GatewayError(GatewayErrorCode.ProjectNotFound, { id: req.project_id });
      c.projectId = req.project_id;
    }
    if (!Object.keys(c.limits!).length) delete c.limits;
    return c;
  }

  /** The keys as answered: their fields, limits and current budget period (one usage query for all). */
  private async answer(keys: ApiKey[]): Promise<ApiKeyResponse[]> {
    const limits = await this.limitFields.describe(
      keys.map((k) => ({ scope: 'key' as const, id: k.id, limits: k.limits })),
    );
    return keys.map((k, i) => toApiKeyResponse(k, limits[i]));
  }
}

/**
 * A project deleted between the check in changesOf and the write (the foreign key refuses it) is the
 * same answer as one that never existed: 404 naming project_id.
 */
function projectGone(projectId: string | null | undefined): (e: unknown) => never {
  return (e) => {
    const code =
      (e as { driverError?: { code?: string }; code?: string }).driverError?.code ?? (e as { code?: string }).code;
    if (code === '23503' && projectId) throw new GatewayError(GatewayErrorCode.ProjectNotFound, { id: projectId });
    throw e;
  };
}

/** First and last characters only, as OpenAI shows a rejected key. */
function redact(key: string): string {
  if (key.length <= 10) return '***';
  return `${key.slice(0, 6)}***${key.slice(-4)}`;
}

export function toApiKeyResponse(k: ApiKey, limits: LimitFieldsResponse): ApiKeyResponse {
  const status = k.revokedAt ? 'revoked' : k.expiresAt && k.expiresAt.getTime() <= Date.now() ? 'expired' : 'active';
  return {
    id: k.id,
    name: k.name,
    prefix: k.prefix,
    project_id: k.projectId,
    scopes: k.scopes,
    models: k.models,
    ...limits,
    spent_yuan: Number(k.spentYuan),
    reserved_yuan: limits.budget_usage?.reserved_yuan ?? 0,
    remaining_yuan: limits.budget_usage?.remaining_yuan ?? null,
    status,
    expires_at: k.expiresAt?.toISOString() ?? null,
    revoked_at: k.revokedAt?.toISOString() ?? null,
    last_used_at: k.lastUsedAt?.toISOString() ?? null,
    created_at: k.createdAt.toISOString(),
  };
}
