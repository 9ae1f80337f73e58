import { createTestDatabase } from '../support/database';
import { startGateway } from '../support/apps';
import { rawRequest } from '../hardening/support/http';
import { CliUsageError, parseArgs, runKeysCommand } from '../../apps/ai-gateway/src/keys/keys.cli';

describe('keys CLI (npm run keys)', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  const env = () => ({ ...process.env, NODE_ENV: 'development', DATABASE_URL: db.url, LOG_LEVEL: 'silent', AI_PROVIDERS_FILE: '' });

  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(() => db?.drop());

  it('creates, lists, updates and revokes keys on the configured database; the created key works', async () => {
    const created = JSON.parse(await runKeysCommand(['create', '--name', 'demo', '--scopes', 'chat,embeddings', '--rpm', '60', '--budget', '10', '--json'], env()));
    expect(created).toMatchObject({ name: 'demo', scopes: ['chat', 'embeddings'], requests_per_minute: 60, budget_yuan: 10 });
    expect(created.key).toMatch(/^sk-/);
    // No development key was made by the CLI's own boot.
    const listed = JSON.parse(await runKeysCommand(['list', '--json'], env()));
    expect(listed.data.map((k: any) => k.name)).toEqual(['demo']);
    const text = await runKeysCommand(['update', created.id, '--budget', 'none', '--models', 'vendor-gpt-4-mini'], env());
    expect(text).toContain('budget=unlimited');
    expect(text).toContain('models=vendor-gpt-4-mini');

    const gw = await startGateway({ AI_KEY_CACHE_TTL_MS: '300' }, { dbUrl: db.url });
    try {
      const ok = await fetch(`${gw.url}/v1/models`, { headers: { authorization: `Bearer ${created.key}` } });
      expect(ok.status).toBe(200);
      expect(await runKeysCommand(['revoke', created.id], env())).toContain('revoked');
      // The running gateway drops its cached lookup after AI_KEY_CACHE_TTL_MS: the test moves the
      // clock (only Date is faked; the gateway runs in this process) instead of sleeping.
      // Asked on a fresh connection: fetch's pooled sockets keep time with Date.
      jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate', 'clearImmediate', 'setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'queueMicrotask', 'hrtime', 'performance'] });
      try {
        jest.setSystemTime(Date.now() + 300);
        const no = await rawRequest(gw.url, { method: 'GET', path: '/v1/models', headers: { authorization: `Bearer ${created.key}` } });
        expect(no.status).toBe(401);
      } finally {
        jest.useRealTimers();
      }
    } finally {
      await gw.close();
    }
  });

  it('refuses bad input before touching the database', async () => {
    expect(() => parseArgs([])).toThrow(CliUsageError);
    expect(() => parseArgs(['create', '--colour', 'red'])).toThrow('unknown option --colour');
    await expect(runKeysCommand(['create'], env())).rejects.toThrow('name');
    await expect(runKeysCommand(['create', '--name', 'x', '--scopes', 'everything'], env())).rejects.toThrow('scopes');
    await expect(runKeysCommand(['create', '--name', 'x', '--budget', 'lots'], env())).rejects.toThrow('--budget must be a number');
    await expect(runKeysCommand(['revoke'], env())).rejects.toThrow('needs a key id');
    await expect(runKeysCommand(['frobnicate'], env())).rejects.toThrow('usage');
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
      expect((await fetch(`${gw.url}/v1/models`, { headers: { authorization: `Bearer ${printed![1]}` } })).status).toBe(200);
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
