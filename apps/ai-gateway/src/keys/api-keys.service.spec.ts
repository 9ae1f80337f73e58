import { randomUUID } from 'crypto';
import type { AuditContext } from '@app/audit';
import { RunningApp, startGateway } from '../../../../test/support/apps';
import { queryRows } from '../../../../test/support/database';
import { GatewayErrorCode } from '../errors';
import { ProjectsService } from '../projects/projects.service';
import { generateKeySecret } from './api-key-secret';
import { ApiKeysRepository } from './api-keys.repository';
import { ApiKeysService } from './api-keys.service';

// The real service on a real database (test/support/apps.ts), called with plain values as the admin
// controller and the authenticator call it.
describe('ApiKeysService', () => {
  let app: RunningApp;
  let keys: ApiKeysService;
  const ctx: AuditContext = {
    actor: { kind: 'admin-token', id: null },
    requestId: 'keys-spec-request',
    address: '198.51.100.7',
  };
  const past = () => new Date(Date.now() - 60_000).toISOString();

  beforeAll(async () => {
    app = await startGateway({ LOG_LEVEL: 'silent' });
    keys = app.app.get(ApiKeysService);
  });
  afterAll(() => app?.close());

  it('issues a key whose secret is answered once and resolves to the stored record; repeated scopes and models are stored once', async () => {
    const created = await keys.create(
      { name: 'spec issue', scopes: ['chat', 'chat', 'vision'], models: ['m', 'm'], budget_yuan: 5 },
      ctx,
    );
    expect(created).toMatchObject({
      name: 'spec issue',
      scopes: ['chat', 'vision'],
      models: ['m'],
      budget_yuan: 5,
      remaining_yuan: 5,
      spent_yuan: 0,
      status: 'active',
    });
    expect(created.key.startsWith(created.prefix)).toBe(true);
    expect(await keys.get(created.id)).not.toHaveProperty('key');
    expect(await keys.resolve(created.key)).toMatchObject({ id: created.id, scopes: ['chat', 'vision'] });
    const audit = await queryRows(
      app.dbUrl,
      `SELECT action, actor_kind, request_id, address FROM ai_audit_log WHERE target_id = $1`,
      [created.id],
    );
    expect(audit).toEqual([
      { action: 'key.created', actor_kind: 'admin-token', request_id: 'keys-spec-request', address: '198.51.100.7' },
    ]);
  });

  it('refuses a malformed or unknown secret as invalid_api_key, naming only its ends', async () => {
    await expect(keys.resolve('not-a-key')).rejects.toMatchObject({
      code: GatewayErrorCode.ApiKeyIncorrect,
      message: 'Incorrect API key provided: ***',
    });
    const unknown = generateKeySecret().key;
    const error = await keys.resolve(unknown).catch((e) => e);
    expect(error).toMatchObject({ code: GatewayErrorCode.ApiKeyIncorrect, errorCode: 'invalid_api_key' });
    expect(error.message).toBe(`Incorrect API key provided: ${unknown.slice(0, 6)}***${unknown.slice(-4)}`);
  });

  it('refuses a key revoked here at once (cached or not) and an expired key, each with its own error', async () => {
    const revoked = await keys.create({ name: 'spec revoke' }, ctx);
    await keys.resolve(revoked.key); // now cached on this replica
    expect(await keys.revoke(revoked.id, ctx)).toMatchObject({ status: 'revoked', revoked_at: expect.any(String) });
    await expect(keys.resolve(revoked.key)).rejects.toMatchObject({ code: GatewayErrorCode.ApiKeyRevoked });

    const expired = await keys.create({ name: 'spec expired', expires_at: past() }, ctx);
    expect(expired.status).toBe('expired');
    await expect(keys.resolve(expired.key)).rejects.toMatchObject({ code: GatewayErrorCode.ApiKeyExpired });
  });

  it('keeps answering a real key from its cache while strangers present thousands of made-up keys', async () => {
    const created = await keys.create({ name: 'spec cached under a flood' }, ctx);
    const repository = app.app.get(ApiKeysRepository);
    const lookups = jest.spyOn(repository, 'findByHash');
    try {
      expect((await keys.resolve(created.key)).id).toBe(created.id);
      expect(lookups).toHaveBeenCalledTimes(1);
      // Made-up keys answered "no key" without the database, more of them than the cache holds.
      lookups.mockImplementation(async () => null);
      for (let i = 0; i < 10_001; i++)
        await expect(keys.resolve(`sk-made-up-${String(i).padStart(20, '0')}`)).rejects.toMatchObject({
          errorCode: 'invalid_api_key',
        });
      lookups.mockClear();
      // The real key is still answered from the cache: no lookup.
      expect((await keys.resolve(created.key)).id).toBe(created.id);
      expect(lookups).not.toHaveBeenCalled();
    } finally {
      lookups.mockRestore();
    }
  });

  it('rotates to a new secret for the same key: the old one is refused at once, limits kept; a revoked key is not rotatable', async () => {
    const created = await keys.create({ name: 'spec rotate', requests_per_minute: 7 }, ctx);
    await keys.resolve(created.key);
    const rotated = await keys.rotate(created.id, ctx);
    expect(rotated).toMatchObject({ id: created.id, requests_per_minute: 7, status: 'active' });
    expect(rotated.key).not.toBe(created.key);
    await expect(keys.resolve(created.key)).rejects.toMatchObject({ code: GatewayErrorCode.ApiKeyIncorrect });
    expect((await keys.resolve(rotated.key)).id).toBe(created.id);

    await keys.revoke(created.id, ctx);
    await expect(keys.rotate(created.id, ctx)).rejects.toMatchObject({ code: GatewayErrorCode.ApiKeyNotRotatable });
    await expect(keys.resolve(rotated.key)).rejects.toMatchObject({ code: GatewayErrorCode.ApiKeyRevoked });
  });

  it.each(['not-a-uuid', '00000000-0000-4000-8000-000000000000'])(
    'answers not found for id %s on get, update, revoke and rotate',
    async (id) => {
      const calls = [
        () => keys.get(id),
        () => keys.update(id, { name: 'x' }, ctx),
        () => keys.revoke(id, ctx),
        () => keys.rotate(id, ctx),
      ];
      for (const call of calls) await expect(call()).rejects.toMatchObject({ code: GatewayErrorCode.ApiKeyNotFound });
    },
  );

  it('refuses a project that does not exist, also one deleted between the check and the write, storing nothing', async () => {
    const missing = randomUUID();
    const name = `spec orphan ${missing}`;
    await expect(keys.create({ name, project_id: missing }, ctx)).rejects.toMatchObject({
      code: GatewayErrorCode.ProjectNotFound,
    });
    // The check passes but the row is gone by the insert: the foreign key's refusal is the same 404.
    jest.spyOn(app.app.get(ApiKeysRepository), 'projectExists').mockResolvedValueOnce(true);
    await expect(keys.create({ name, project_id: missing }, ctx)).rejects.toMatchObject({
      code: GatewayErrorCode.ProjectNotFound,
    });
    expect(await queryRows(app.dbUrl, `SELECT id FROM ai_api_keys WHERE name = $1`, [name])).toEqual([]);
  });

  it('changes only the fields an update names; null clears a list, a limit and the project', async () => {
    const project = await app.app.get(ProjectsService).create({ name: 'spec key project' }, ctx);
    const created = await keys.create(
      { name: 'spec update', scopes: ['chat'], requests_per_minute: 10, budget_yuan: 5, project_id: project.id },
      ctx,
    );
    const renamed = await keys.update(created.id, { name: 'spec updated', models: ['m'] }, ctx);
    expect(renamed).toMatchObject({
      name: 'spec updated',
      scopes: ['chat'],
      models: ['m'],
      requests_per_minute: 10,
      budget_yuan: 5,
      project_id: project.id,
    });
    const cleared = await keys.update(created.id, { scopes: null, requests_per_minute: null, project_id: null }, ctx);
    expect(cleared).toMatchObject({
      name: 'spec updated',
      scopes: null,
      models: ['m'],
      requests_per_minute: null,
      budget_yuan: 5,
      project_id: null,
    });
  });

  it('lists newest first, leaving out revoked keys unless asked, with the total of all that match', async () => {
    const tag = `spec-list-${randomUUID().slice(0, 8)}`;
    const first = await keys.create({ name: `${tag} first` }, ctx);
    const second = await keys.create({ name: `${tag} second` }, ctx);
    const third = await keys.create({ name: `${tag} third` }, ctx);
    await keys.revoke(second.id, ctx);
    const page = { limit: 10, offset: 0, q: tag };
    const live = await keys.list({ ...page, includeRevoked: false });
    expect([live.total, live.data.map((k) => k.id)]).toEqual([2, [third.id, first.id]]);
    const all = await keys.list({ ...page, includeRevoked: true });
    expect([all.total, all.data.map((k) => k.id)]).toEqual([3, [third.id, second.id, first.id]]);
    const paged = await keys.list({ ...page, limit: 1, offset: 1, includeRevoked: true });
    expect([paged.total, paged.data.map((k) => k.id)]).toEqual([3, [second.id]]);
  });
});
