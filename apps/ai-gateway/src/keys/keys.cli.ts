/**
 * `npm run keys -- <command>`: manage API keys on the configured database (same environment as the
 * gateway: DATABASE_URL or the embedded PostgreSQL under DATA_DIR).
 *
 *   create --name demo [--scopes chat,embeddings] [--models m1,m2] [--project <id>] [limits] [--expires 2027-01-01T00:00:00Z]
 *   list [--all]
 *   get <id>
 *   update <id> [--name x] [--scopes ...|none] [--models ...|none] [--project <id>|none] [limits] [--expires iso|none]
 *   rotate <id>                  (a new secret for the same key, shown once)
 *   revoke <id>
 *   project create --name web [limits]
 *   project list [--search text]
 *   project show <id>
 *   project update <id> [--name x] [limits]
 *   project delete <id>          (refused while keys that are not revoked belong to it)
 * Limits, on keys and projects alike ("none" removes one on update):
 *   --rpm n  --tpm n  --concurrency n  --model-limits '{"vendor-gpt-4":{"tokens_per_minute":20000}}'
 *   --budget yuan  --budget-tokens n  --budget-period lifetime|daily|weekly|monthly  --alert 0.8
 * Add --json for machine-readable output. The full key is printed by `create` only.
 */
import { userInfo } from 'os';
import { plainToInstance } from 'class-transformer';
import { AuditContext, cliContext } from '@app/audit';
import { validate } from 'class-validator';
import { flattenValidationErrors } from '@app/envelope';
import { createGatewayApp } from '../gateway.app';
import { ApiKeysService } from './api-keys.service';
import { ApiKeyResponse, CreateApiKeyRequest, UpdateApiKeyRequest } from './dtos/api-key.dto';
import { CreateProjectRequest, ProjectResponse, UpdateProjectRequest } from '../projects/dtos/project.dto';
import { ProjectsService } from '../projects/projects.service';
import type { LimitFieldsResponse } from '../limits/dtos/limit-fields.dto';

const LIMIT_FLAGS =
  '[--rpm n] [--tpm n] [--concurrency n] [--model-limits json] [--budget yuan] [--budget-tokens n] [--budget-period lifetime|daily|weekly|monthly] [--alert 0-1]';
const USAGE = [
  `usage: keys create --name <name> [--scopes a,b] [--models a,b] [--project id] ${LIMIT_FLAGS} [--expires iso] | list [--all] | get <id> | update <id> [flags, "none" clears] | rotate <id> | revoke <id>`,
  `       keys project create --name <name> ${LIMIT_FLAGS} | project list [--search text] | project show <id> | project update <id> [flags, "none" clears] | project delete <id>`,
  '       (add --json for JSON)',
].join('\n');
const VALUE_FLAGS = [
  'name',
  'scopes',
  'models',
  'rpm',
  'budget',
  'expires',
  'tpm',
  'concurrency',
  'model-limits',
  'budget-tokens',
  'budget-period',
  'alert',
  'project',
  'search',
];
/** Flags of keys only: a project has no scopes, allowlist, expiry or project. */
const KEY_ONLY_FLAGS = ['scopes', 'models', 'expires', 'project'];
const KEY_COMMANDS = ['create', 'list', 'get', 'update', 'rotate', 'revoke'];
const PROJECT_COMMANDS = ['create', 'list', 'show', 'update', 'delete'];

export class CliUsageError extends Error {}

export function parseArgs(args: string[]): {
  command: string;
  id?: string;
  flags: Record<string, string>;
  json: boolean;
  all: boolean;
} {
  const [command, ...rest] = args;
  if (!command) throw new CliUsageError(USAGE);
  const flags: Record<string, string> = {};
  const positional: string[] = [];
  let json = false;
  let all = false;
  for (let i = 0; i < rest.length; i++) {
    const a = rest[i];
    if (a === '--json') json = true;
    else if (a === '--all') all = true;
    else if (a.startsWith('--')) {
      const [name, inline] = a.slice(2).split(/=(.*)/s, 2);
      if (!VALUE_FLAGS.includes(name)) throw new CliUsageError(`unknown option --${name}\n${USAGE}`);
      const value = inline ?? rest[++i];
      if (value === undefined) throw new CliUsageError(`--${name} needs a value`);
      flags[name] = value;
    } else positional.push(a);
  }
  // `project <command> [id]`: the command is named with its group, as in the usage text.
  if (command === 'project')
    return { command: positional[0] ? `project ${positional[0]}` : 'project', id: positional[1], flags, json, all };
  return { command, id: positional[0], flags, json, all };
}

function list(v: string): string[] {
  return v
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}

function num(v: string, flag: string): number {
  const n = Number(v);
  if (v.trim() === '' || !Number.isFinite(n)) throw new CliUsageError(`--${flag} must be a number`);
  return n;
}

function json(v: string, flag: string): unknown {
  try {
    return JSON.parse(v);
  } catch {
    throw new CliUsageError(`--${flag} must be JSON, e.g. '{"vendor-gpt-4":{"tokens_per_minute":20000}}'`);
  }
}

/** Builds the admin API body from flags; `none` clears a limit on update. */
export function bodyFromFlags(flags: Record<string, string>, forUpdate: boolean): Record<string, unknown> {
  const clear = (v: string) => forUpdate && v === 'none';
  const body: Record<string, unknown> = {};
  if (flags.name !== undefined) body.name = flags.name;
  if (flags.scopes !== undefined) body.scopes = clear(flags.scopes) ? null : list(flags.scopes);
  if (flags.models !== undefined) body.models = clear(flags.models) ? null : list(flags.models);
  if (flags.rpm !== undefined) body.requests_per_minute = clear(flags.rpm) ? null : num(flags.rpm, 'rpm');
  if (flags.budget !== undefined) body.budget_yuan = clear(flags.budget) ? null : num(flags.budget, 'budget');
  if (flags.expires !== undefined) body.expires_at = clear(flags.expires) ? null : flags.expires;
  if (flags.tpm !== undefined) body.tokens_per_minute = clear(flags.tpm) ? null : num(flags.tpm, 'tpm');
  if (flags.concurrency !== undefined)
    body.max_concurrent_requests = clear(flags.concurrency) ? null : num(flags.concurrency, 'concurrency');
  if (flags['model-limits'] !== undefined)
    body.model_limits = clear(flags['model-limits']) ? null : json(flags['model-limits'], 'model-limits');
  if (flags['budget-tokens'] !== undefined)
    body.budget_tokens = clear(flags['budget-tokens']) ? null : num(flags['budget-tokens'], 'budget-tokens');
  // Not removable: a budget without a period is a lifetime one (`--budget-period lifetime`).
  if (flags['budget-period'] !== undefined) body.budget_period = flags['budget-period'];
  if (flags.alert !== undefined) body.alert_threshold = clear(flags.alert) ? null : num(flags.alert, 'alert');
  if (flags.project !== undefined) body.project_id = clear(flags.project) ? null : flags.project;
  return body;
}

/** The body of a project command: the name and the limits; key-only flags are refused by name. */
export function projectBodyFromFlags(flags: Record<string, string>, forUpdate: boolean): Record<string, unknown> {
  const keyOnly = KEY_ONLY_FLAGS.find((f) => flags[f] !== undefined);
  if (keyOnly) throw new CliUsageError(`--${keyOnly} is for keys, not projects\n${USAGE}`);
  return bodyFromFlags(flags, forUpdate);
}

async function validated<T extends object>(cls: new () => T, body: Record<string, unknown>): Promise<T> {
  const dto = plainToInstance(cls, body);
  const errors = await validate(dto, { whitelist: true, forbidNonWhitelisted: true });
  if (errors.length)
    throw new CliUsageError(
      flattenValidationErrors(errors)
        .map((e) => `${e.field}: ${e.message}`)
        .join('\n'),
    );
  return dto;
}

/** The limits beyond requests per minute and the yuan budget, only those that are set. */
function limitsSet(l: LimitFieldsResponse): string[] {
  const out: string[] = [];
  if (l.tokens_per_minute !== null) out.push(`tpm=${l.tokens_per_minute}`);
  if (l.max_concurrent_requests !== null) out.push(`concurrency=${l.max_concurrent_requests}`);
  if (l.model_limits !== null) out.push(`model_limits=${JSON.stringify(l.model_limits)}`);
  if (l.budget_tokens !== null) out.push(`budget_tokens=${l.budget_tokens}`);
  if (l.budget_period !== 'lifetime') out.push(`period=${l.budget_period}`);
  if (l.alert_threshold !== null) out.push(`alert=${l.alert_threshold}`);
  const u = l.budget_usage;
  if (u && u.period !== 'lifetime') out.push(`this_period=${u.spent_yuan}yuan/${u.spent_tokens}tokens`);
  return out;
}

function describe(k: ApiKeyResponse): string {
  const limits = [
    `scopes=${k.scopes?.join(',') ?? 'all'}`,
    `models=${k.models?.join(',') ?? 'all'}`,
    ...(k.project_id ? [`project=${k.project_id}`] : []),
    `rpm=${k.requests_per_minute ?? 'unlimited'}`,
    `budget=${k.budget_yuan ?? 'unlimited'}`,
    ...limitsSet(k),
    `spent=${k.spent_yuan}`,
    `expires=${k.expires_at ?? 'never'}`,
  ];
  return `${k.id}  ${k.prefix}…  ${k.status.padEnd(7)}  ${k.name}  ${limits.join(' ')}`;
}

function describeProject(p: ProjectResponse): string {
  const limits = [
    `keys=${p.key_count}`,
    `rpm=${p.requests_per_minute ?? 'unlimited'}`,
    `budget=${p.budget_yuan ?? 'unlimited'}`,
    ...limitsSet(p),
  ];
  return `${p.id}  ${p.name}  ${limits.join(' ')}`;
}

export async function runKeysCommand(args: string[], env: Record<string, string | undefined>): Promise<string> {
  const { command, id, flags, json, all } = parseArgs(args);
  const [group, verb] = command.startsWith('project')
    ? ['project', command.slice('project'.length).trim()]
    : ['key', command];
  if (!(group === 'project' ? PROJECT_COMMANDS : KEY_COMMANDS).includes(verb)) throw new CliUsageError(USAGE);
  if (['get', 'update', 'rotate', 'revoke', 'show', 'delete'].includes(verb) && !id)
    throw new CliUsageError(`${command} needs a ${group} id\n${USAGE}`);
  let body: object | undefined;
  if (group === 'key' && verb === 'create') body = await validated(CreateApiKeyRequest, bodyFromFlags(flags, false));
  if (group === 'key' && verb === 'update') body = await validated(UpdateApiKeyRequest, bodyFromFlags(flags, true));
  if (group === 'project' && verb === 'create')
    body = await validated(CreateProjectRequest, projectBodyFromFlags(flags, false));
  if (group === 'project' && verb === 'update')
    body = await validated(UpdateProjectRequest, projectBodyFromFlags(flags, true));

  // Boot without the development key or the webhook worker so only this command acts (its events wait for a running replica).
  const { app, database } = await createGatewayApp({ ...env, AI_DEV_KEY: 'false', WEBHOOK_WORKER: 'false' });
  const ctx = cliContext(cliUser());
  try {
    await app.init();
    const out = (value: unknown, text: string) => (json ? JSON.stringify(value, null, 2) : text);
    if (group === 'project') return await runProjectCommand(app.get(ProjectsService), verb, id, flags, body, out, ctx);
    const keys = app.get(ApiKeysService);
    switch (verb) {
      case 'create': {
        const created = await keys.create(body as CreateApiKeyRequest, ctx);
        return out(created, `${describe(created)}\n\nAPI key (shown once, store it now):\n${created.key}`);
      }
      case 'list': {
        const res = await keys.list({ includeRevoked: all, limit: 500, offset: 0 });
        return out(res, res.data.length ? res.data.map(describe).join('\n') : 'no keys');
      }
      case 'get': {
        const k = await keys.get(id!);
        return out(k, describe(k));
      }
      case 'update': {
        const k = await keys.update(id!, body as UpdateApiKeyRequest, ctx);
        return out(k, describe(k));
      }
      case 'rotate': {
        const rotated = await keys.rotate(id!, ctx);
        return out(
          rotated,
          `${describe(rotated)}\n\nNew API key (shown once, store it now; the old one no longer works):\n${rotated.key}`,
        );
      }
      default: {
        const k = await keys.revoke(id!, ctx);
        return out(k, `revoked: ${describe(k)}`);
      }
    }
  } finally {
    await app.close();
    await database.stop();
  }
}

async function runProjectCommand(
  projects: ProjectsService,
  verb: string,
  id: string | undefined,
  flags: Record<string, string>,
  body: object | undefined,
  out: (value: unknown, text: string) => string,
  ctx: AuditContext,
): Promise<string> {
  switch (verb) {
    case 'create': {
      const p = await projects.create(body as CreateProjectRequest, ctx);
      return out(p, describeProject(p));
    }
    case 'list': {
      const res = await projects.list({ q: flags.search, limit: 500, offset: 0 });
      return out(res, res.data.length ? res.data.map(describeProject).join('\n') : 'no projects');
    }
    case 'show': {
      const p = await projects.get(id!);
      return out(p, describeProject(p));
    }
    case 'update': {
      const p = await projects.update(id!, body as UpdateProjectRequest, ctx);
      return out(p, describeProject(p));
    }
    default: {
      const res = await projects.delete(id!, ctx);
      return out(res, `deleted: ${res.id}`);
    }
  }
}

/** The operating-system user running the CLI: the actor of its audit rows. */
function cliUser(): string | null {
  try {
    return userInfo().username;
  } catch {
    return null;
  }
}

if (require.main === module) {
  runKeysCommand(process.argv.slice(2), process.env)
    .then((msg) => {
      process.stdout.write(`${msg}\n`);
      process.exit(0);
    })
    .catch((err) => {
      process.stderr.write(`${err instanceof Error ? err.message : err}\n`);
      process.exit(err instanceof CliUsageError ? 2 : 1);
    });
}
