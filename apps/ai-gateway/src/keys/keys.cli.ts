/**
 * `npm run keys -- <command>`: manage API keys on the configured database (same environment as the
 * gateway: DATABASE_URL or the embedded PostgreSQL under DATA_DIR).
 *
 *   create --name demo [--scopes chat,embeddings] [--models m1,m2] [--rpm 60] [--budget 10] [--expires 2027-01-01T00:00:00Z]
 *   list [--all]
 *   get <id>
 *   update <id> [--name x] [--scopes ...|none] [--models ...|none] [--rpm n|none] [--budget yuan|none] [--expires iso|none]
 *   revoke <id>
 * Add --json for machine-readable output. The full key is printed by `create` only.
 */
import { plainToInstance } from 'class-transformer';
import { validate } from 'class-validator';
import { flattenValidationErrors } from '@app/envelope';
import { createGatewayApp } from '../gateway.app';
import { ApiKeysService } from './api-keys.service';
import { ApiKeyResponse, CreateApiKeyRequest, UpdateApiKeyRequest } from './dtos/api-key.dtos';

const USAGE = 'usage: keys create --name <name> [--scopes a,b] [--models a,b] [--rpm n] [--budget yuan] [--expires iso] | list [--all] | get <id> | update <id> [flags, "none" clears] | revoke <id>  (add --json for JSON)';
const VALUE_FLAGS = ['name', 'scopes', 'models', 'rpm', 'budget', 'expires'];

export class CliUsageError extends Error {}

export function parseArgs(args: string[]): { command: string; id?: string; flags: Record<string, string>; json: boolean; all: boolean } {
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
  return { command, id: positional[0], flags, json, all };
}

function list(v: string): string[] {
  return v.split(',').map((s) => s.trim()).filter(Boolean);
}

function num(v: string, flag: string): number {
  const n = Number(v);
  if (v.trim() === '' || !Number.isFinite(n)) throw new CliUsageError(`--${flag} must be a number`);
  return n;
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
  return body;
}

async function validated<T extends object>(cls: new () => T, body: Record<string, unknown>): Promise<T> {
  const dto = plainToInstance(cls, body);
  const errors = await validate(dto, { whitelist: true, forbidNonWhitelisted: true });
  if (errors.length) throw new CliUsageError(flattenValidationErrors(errors).map((e) => `${e.field}: ${e.message}`).join('\n'));
  return dto;
}

function describe(k: ApiKeyResponse): string {
  const limits = [
    `scopes=${k.scopes?.join(',') ?? 'all'}`,
    `models=${k.models?.join(',') ?? 'all'}`,
    `rpm=${k.requests_per_minute ?? 'unlimited'}`,
    `budget=${k.budget_yuan ?? 'unlimited'}`,
    `spent=${k.spent_yuan}`,
    `expires=${k.expires_at ?? 'never'}`,
  ];
  return `${k.id}  ${k.prefix}…  ${k.status.padEnd(7)}  ${k.name}  ${limits.join(' ')}`;
}

export async function runKeysCommand(args: string[], env: Record<string, string | undefined>): Promise<string> {
  const { command, id, flags, json, all } = parseArgs(args);
  if (!['create', 'list', 'get', 'update', 'revoke'].includes(command)) throw new CliUsageError(USAGE);
  if (['get', 'update', 'revoke'].includes(command) && !id) throw new CliUsageError(`${command} needs a key id\n${USAGE}`);
  const createBody = command === 'create' ? await validated(CreateApiKeyRequest, bodyFromFlags(flags, false)) : undefined;
  const updateBody = command === 'update' ? await validated(UpdateApiKeyRequest, bodyFromFlags(flags, true)) : undefined;

  // Boot without the development key so only this command acts.
  const { app, database } = await createGatewayApp({ ...env, AI_DEV_KEY: 'false' });
  try {
    await app.init();
    const keys = app.get(ApiKeysService);
    const out = (value: unknown, text: string) => (json ? JSON.stringify(value, null, 2) : text);
    switch (command) {
      case 'create': {
        const created = await keys.create(createBody!);
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
        const k = await keys.update(id!, updateBody!);
        return out(k, describe(k));
      }
      default: {
        const k = await keys.revoke(id!);
        return out(k, `revoked: ${describe(k)}`);
      }
    }
  } finally {
    await app.close();
    await database.stop();
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
