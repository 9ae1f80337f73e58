import { createTestDatabase } from '../support/database';
import { startGateway } from '../support/apps';
import { rawRequest } from '../hardening/support/http';
import { CliUsageError, parseArgs, runKeysCommand } from '../../apps/ai-gateway/src/keys/keys.cli';

describe('keys CLI (npm run keys)', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  const env = () => ({
    ...process.env,
    NODE_ENV: 'development',
    DATABASE_URL: db.url,
    LOG_LEVEL: 'silent',
    AI_PROVIDERS_FILE: '',
  });

  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(() => db?.drop());

  it('creates, lists, updates and revokes keys on the configured database; the created key works', async () => {
    const created = JSON.parse(
      await runKeysCommand(
        ['create', '--name', 'demo', '--scopes', 'chat,embeddings', '--rpm', '60', '--budget', '10', '--json'],
        env(),
      ),
    );
    expect(created).toMatchObject({
      name: 'demo',
      scopes: ['chat', 'embeddings'],
      requests_per_minute: 60,
      budget_yuan: 10,
    });
    expect(created.key).toMatch(/^sk-/);
    // No development key was made by the CLI's own boot.
    const listed = JSON.parse(await runKeysCommand(['list', '--json'], env()));
    expect(listed.data.map((k: any) => k.name)).toEqual(['demo']);
    const text = await runKeysCommand(
      ['update', created.id, '--budget', 'none', '--models', 'vendor-gpt-4-mini'],
      env(),
    );
    expect(text).toContain('budget=unlimited');
    expect(text).toContain('models=vendor-gpt-4-mini');
    // rotate: a new secret for the same key (the one the gateway is asked with below).
    const rotated = JSON.parse(await runKeysCommand(['rotate', created.id, '--json'], env()));
    expect(rotated).toMatchObject({ id: created.id, name: 'demo' });
    expect(rotated.key).not.toBe(created.key);
    created.key = rotated.key;

    const gw = await startGateway({ AI_KEY_CACHE_TTL_MS: '300' }, { dbUrl: db.url });
    try {
      const ok = await fetch(`${gw.url}/v1/models`, { headers: { authorization: `Bearer ${created.key}` } });
      expect(ok.status).toBe(200);
      expect(await runKeysCommand(['revoke', created.id], env())).toContain('revoked');
      // The running gateway drops its cached lookup after AI_KEY_CACHE_TTL_MS: the test moves the
      // clock (only Date is faked; the gateway runs in this process) instead of sleeping.
      // Asked on a fresh connection: fetch's pooled sockets keep time with Date.
      jest.useFakeTimers({
        doNotFake: [
          'nextTick',
          'setImmediate',
          'clearImmediate',
          'setTimeout',
          'clearTimeout',
          'setInterval',
          'clearInterval',
          'queueMicrotask',
          'hrtime',
          'performance',
        ],
      });
      try {
        jest.setSystemTime(Date.now() + 300);
        const no = await rawRequest(gw.url, {
          method: 'GET',
          path: '/v1/models',
          headers: { authorization: `Bearer ${created.key}` },
        });
        expect(no.status).toBe(401);
      } finally {
        jest.useRealTimers();
      }
    } finally {
      await gw.close();
    }
  });

  it('manages projects and puts keys in them with every limit flag', async () => {
    const project = JSON.parse(
      await runKeysCommand(
        [
          'project',
          'create',
          '--name',
          'web',
          '--rpm',
          '600',
          '--tpm',
          '200000',
          '--concurrency',
          '20',
          '--model-limits',
          '{"vendor-gpt-4":{"tokens_per_minute":20000}}',
          '--budget',
          '500',
          '--budget-period',
          'monthly',
          '--alert',
          '0.8',
          '--json',
        ],
        env(),
      ),
    );
    expect(project).toMatchObject({
      name: 'web',
      requests_per_minute: 600,
      tokens_per_minute: 200000,
      max_concurrent_requests: 20,
      model_limits: { 'vendor-gpt-4': { tokens_per_minute: 20000 } },
      budget_yuan: 500,
      budget_period: 'monthly',
      alert_threshold: 0.8,
      key_count: 0,
    });

    const key = JSON.parse(
      await runKeysCommand(
        [
          'create',
          '--name',
          'in-web',
          '--project',
          project.id,
          '--tpm',
          '1000',
          '--concurrency',
          '2',
          '--budget-tokens',
          '50000',
          '--budget-period',
          'daily',
          '--alert',
          '0.5',
          '--json',
        ],
        env(),
      ),
    );
    expect(key).toMatchObject({
      project_id: project.id,
      tokens_per_minute: 1000,
      max_concurrent_requests: 2,
      budget_tokens: 50000,
      budget_period: 'daily',
      alert_threshold: 0.5,
      budget_usage: { period: 'daily' },
    });
    const keyText = await runKeysCommand(['get', key.id], env());
    expect(keyText).toContain(`project=${project.id}`);
    expect(keyText).toContain('tpm=1000 concurrency=2 budget_tokens=50000 period=daily alert=0.5');

    const shown = await runKeysCommand(['project', 'show', project.id], env());
    expect(shown).toContain(`${project.id}  web  keys=1 rpm=600 budget=500 tpm=200000 concurrency=20`);
    expect(shown).toContain('period=monthly');
    await runKeysCommand(['project', 'create', '--name', 'batch'], env());
    expect(
      JSON.parse(await runKeysCommand(['project', 'list', '--search', 'WE', '--json'], env())).data.map(
        (p: any) => p.name,
      ),
    ).toEqual(['web']);
    expect((await runKeysCommand(['project', 'list'], env())).split('\n')).toHaveLength(2);

    const updated = JSON.parse(
      await runKeysCommand(
        ['project', 'update', project.id, '--name', 'web-2', '--tpm', 'none', '--model-limits', 'none', '--json'],
        env(),
      ),
    );
    expect(updated).toMatchObject({
      name: 'web-2',
      tokens_per_minute: null,
      model_limits: null,
      requests_per_minute: 600,
    });

    await expect(runKeysCommand(['project', 'delete', project.id], env())).rejects.toThrow(/still owns 1 key/);
    expect(
      JSON.parse(await runKeysCommand(['update', key.id, '--project', 'none', '--json'], env())).project_id,
    ).toBeNull();
    expect(await runKeysCommand(['project', 'delete', project.id], env())).toBe(`deleted: ${project.id}`);
    await expect(runKeysCommand(['project', 'show', project.id], env())).rejects.toThrow(
      `No project with id ${project.id}`,
    );
  });

  it('refuses bad input before touching the database', async () => {
    expect(() => parseArgs([])).toThrow(CliUsageError);
    expect(() => parseArgs(['create', '--colour', 'red'])).toThrow('unknown option --colour');
    await expect(runKeysCommand(['create'], env())).rejects.toThrow('name');
    await expect(runKeysCommand(['create', '--name', 'x', '--scopes', 'everything'], env())).rejects.toThrow('scopes');
    await expect(runKeysCommand(['create', '--name', 'x', '--budget', 'lots'], env())).rejects.toThrow(
      '--budget must be a number',
    );
    await expect(runKeysCommand(['revoke'], env())).rejects.toThrow('needs a key id');
    await expect(runKeysCommand(['frobnicate'], env())).rejects.toThrow('usage');
    await expect(runKeysCommand(['project'], env())).rejects.toThrow('usage');
    await expect(runKeysCommand(['project', 'revoke', 'x'], env())).rejects.toThrow('usage');
    await expect(runKeysCommand(['project', 'show'], env())).rejects.toThrow('project show needs a project id');
    await expect(runKeysCommand(['project', 'create', '--name', 'x', '--scopes', 'chat'], env())).rejects.toThrow(
      '--scopes is for keys, not projects',
    );
    await expect(runKeysCommand(['project', 'create', '--name', 'x', '--alert', '1.5'], env())).rejects.toThrow(
      'alert_threshold',
    );
    await expect(
      runKeysCommand(['project', 'create', '--name', 'x', '--budget-period', 'hourly'], env()),
    ).rejects.toThrow('budget_period');
    await expect(
      runKeysCommand(['create', '--name', 'x', '--model-limits', '{"m":{"tokens_per_minute":0}}'], env()),
    ).rejects.toThrow('model_limits');
    await expect(runKeysCommand(['create', '--name', 'x', '--model-limits', 'nope'], env())).rejects.toThrow(
      '--model-limits must be JSON',
    );
    await expect(runKeysCommand(['create', '--name', 'x', '--project', 'nope'], env())).rejects.toThrow('project_id');
  });
});

describe('development key at boot', () => {
  it('creates and prints one key when none exists, only in development', async () => {
    const writes: string[] = [];
    const spy = jest.spyOn(process.stdout, 'write').mockImplementation(((chunk: any) => {
      writes.push(String(chunk));
      return true;
    }) as any);
    let gw: Awaited<ReturnType<typeof startGateway>> | undefined;
    let again: Awaited<ReturnType<typeof startGateway>> | undefined;
    try {
      gw = await startGateway({ NODE_ENV: 'development', AI_PROVIDERS_FILE: '' }, { keepDatabase: true });
      const printed = writes.join('').match(/Development API key \(shown once\): (sk-\S+)/);
      expect(printed).not.toBeNull();
      expect((await fetch(`${gw.url}/v1/models`, { headers: { authorization: `Bearer ${printed![1]}` } })).status).toBe(
        200,
      );
      await gw.app.close();
      writes.length = 0;
      again = await startGateway({ NODE_ENV: 'development', AI_PROVIDERS_FILE: '' }, { dbUrl: gw.dbUrl });
      expect(writes.join('')).not.toContain('Development API key');
    } finally {
      spy.mockRestore();
      await again?.close();
      await gw?.close();
    }
  });
});
