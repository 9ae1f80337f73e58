/**
 * DATABASE_STATEMENT_TIMEOUT_MS on the real apps and PostgreSQL: every pooled connection cuts a statement that
 * runs longer (here 2 s: long enough for every other statement of a loaded machine), a request whose statement is cut answers 503 in its app's error shape, and the
 * migrations run without the timeout (libs/database/src/uncut.ts).
 */
import { Client } from 'pg';
import { DataSource, MigrationInterface, QueryRunner } from 'typeorm';
import { dataSourceOptions, runMigrationsUncut } from '@app/database';
import { RunningApp, startGateway, startMembership } from '../support/apps';
import { createTestDatabase, sqlClient } from '../support/database';
import { until } from '../support/until';
import { ApiKeysService } from '../../apps/ai-gateway/src/keys/api-keys.service';

const TIMEOUT_MS = 2000;
const env = { LOG_LEVEL: 'silent', DATABASE_STATEMENT_TIMEOUT_MS: String(TIMEOUT_MS) };

/**
 * Holds `table` locked (ACCESS EXCLUSIVE) by another session while `request` runs: a statement of the request
 * that reads it waits on the lock until its timeout cuts it, however long the lock is held.
 */
async function whileLocked<T>(dbUrl: string, table: string, request: () => Promise<T>): Promise<T> {
  const holder = await sqlClient(dbUrl);
  try {
    await holder.query('BEGIN');
    await holder.query(`LOCK TABLE ${table} IN ACCESS EXCLUSIVE MODE`);
    return await request();
  } finally {
    await holder.query('ROLLBACK').catch(() => undefined);
    await holder.end();
  }
}

describe('database statement timeout', () => {
  describe('ai-gateway', () => {
    let app: RunningApp;
    beforeAll(async () => {
      app = await startGateway(env);
    });
    afterAll(() => app?.close());

    it("cuts a statement of the app's pool that runs longer than the timeout", async () => {
      const ds = app.app.get(DataSource);
      expect(await ds.query('SHOW statement_timeout')).toEqual([{ statement_timeout: '2s' }]); // TIMEOUT_MS as PostgreSQL shows it
      await expect(ds.query('SELECT pg_sleep(5)')).rejects.toMatchObject({ driverError: { code: '57014' } });
      // The connection is fine afterwards.
      expect(await ds.query('SELECT 1 AS one')).toEqual([{ one: 1 }]);
    });

    it('answers a request whose statement is cut 503 in the OpenAI error shape, with Retry-After', async () => {
      const created = await app.app
        .get(ApiKeysService)
        .create({ name: 'cut read' }, { actor: { kind: 'admin-token', id: null }, requestId: null, address: null });
      const res = await whileLocked(app.dbUrl, 'ai_usage_hourly', () =>
        fetch(`${app.url}/v1/usage`, { headers: { authorization: `Bearer ${created.key}` } }),
      );
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toBe('1');
      expect(await res.json()).toEqual({
        error: {
          message: 'Service temporarily unavailable, retry shortly',
          type: 'service_unavailable',
          code: 'database_timeout',
          param: null,
        },
      });
    });
  });

  describe('membership', () => {
    let app: RunningApp;
    beforeAll(async () => {
      app = await startMembership({ ...env, ADMIN_ACCOUNT: 'st_admin', ADMIN_PASSWORD: 'statement-timeout-pass' });
    });
    afterAll(() => app?.close());

    it('answers a request whose statement is cut 503 in the envelope', async () => {
      const login = await fetch(`${app.url}/api/v1/app/auth/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ account: 'st_admin', password: 'statement-timeout-pass' }),
      });
      const token = ((await login.json()) as { data: { token: string } }).data.token;
      const res = await whileLocked(app.dbUrl, 'members', () =>
        fetch(`${app.url}/api/v1/admin/members`, { headers: { authorization: `Bearer ${token}` } }),
      );
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toBe('1');
      expect(await res.json()).toMatchObject({ code: 503, data: null });
    });
  });

  describe('migrations', () => {
    let db: Awaited<ReturnType<typeof createTestDatabase>>;
    let ds: DataSource | undefined;
    let ran = 0;
    class SlowMigration1000000000000 implements MigrationInterface {
      name = 'SlowMigration1000000000000';
      async up(q: QueryRunner): Promise<void> {
        await q.query(`SELECT pg_sleep(${(TIMEOUT_MS * 1.5) / 1000})`); // longer than the pool's timeout
        ran++;
      }
      async down(): Promise<void> {}
    }
    beforeAll(async () => {
      db = await createTestDatabase();
    });
    afterAll(async () => {
      await ds?.destroy();
      await db?.drop();
    });

    it("runs without the pool's timeout, and gives the connection back with it", async () => {
      ds = await new DataSource(
        dataSourceOptions(db.url, {
          entities: [],
          migrations: [SlowMigration1000000000000],
          migrationsTableName: 'statement_timeout_migrations',
          migrationsRun: true,
          statementTimeoutMs: TIMEOUT_MS,
        }),
      ).initialize();
      expect(ran).toBe(0); // initialize runs none: DatabaseModule runs them uncut
      const done = await runMigrationsUncut(ds);
      expect(done.map((m) => m.name)).toEqual(['SlowMigration1000000000000']);
      expect(ran).toBe(1);
      // Every connection of the pool (the migration's one included) has the pool's timeout again.
      const pool = (ds.driver as unknown as { master: { totalCount: number; idleCount: number } }).master;
      await until(() => pool.idleCount === pool.totalCount);
      const runners = Array.from({ length: pool.totalCount }, () => ds!.createQueryRunner());
      try {
        for (const r of runners) expect(await r.query('SHOW statement_timeout')).toEqual([{ statement_timeout: '2s' }]);
      } finally {
        for (const r of runners) await r.release();
      }
      const check = new Client({ connectionString: db.url });
      await check.connect();
      try {
        expect((await check.query('SELECT name FROM statement_timeout_migrations')).rows).toEqual([
          { name: 'SlowMigration1000000000000' },
        ]);
      } finally {
        await check.end();
      }
    });
  });
});
