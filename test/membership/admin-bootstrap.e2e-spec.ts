import { Readable } from 'stream';
import { Client } from 'pg';
import { createAdminCommand } from '../../apps/membership/src/members/admin.cli';
import { RunningApp, startMembership } from '../support/apps';
import { sqlClient } from '../support/database';
import { bearer, client } from './fakes';

const ADMIN = '/api/v1/admin/system/site-config';

// M5: a stranger who registers the admin's name before the operator bootstraps it must not become admin.
describe('membership: admin bootstrap never promotes an existing member by name', () => {
  let app: RunningApp;
  let db: Client;

  beforeAll(async () => {
    app = await startMembership();
    db = await sqlClient(app.dbUrl);
    // The attacker registers the name the operator will use (differing only in case).
    await client(app.url)
      .post('/api/v1/app/auth/register')
      .send({ username: 'OPS_Admin', password: 'attacker-password' })
      .expect(200);
  });
  afterAll(async () => {
    await db?.end();
    await app?.close();
  });

  const roles = async () =>
    (await db.query(`SELECT roles FROM members WHERE lower(username) = 'ops_admin'`)).rows.map((r) => r.roles);
  const attackerToken = async (url: string) =>
    (
      await client(url)
        .post('/api/v1/app/auth/login')
        .send({ account: 'OPS_Admin', password: 'attacker-password' })
        .expect(200)
    ).body.data.token as string;

  it('boot with ADMIN_ACCOUNT naming a non-admin member starts, logs the refusal and grants nothing', async () => {
    const again = await startMembership(
      { ADMIN_ACCOUNT: 'ops_admin', ADMIN_PASSWORD: 'operator-password-1' },
      { dbUrl: app.dbUrl, keepDatabase: true },
    );
    try {
      expect((await roles()).map((r) => r.includes('admin'))).toEqual([false]);
      const token = await attackerToken(again.url);
      await client(again.url)
        .put(ADMIN)
        .set(bearer(token))
        .send({ values: { 'site.name': 'owned' } })
        .expect(403);
      // The operator's password was not set on the attacker's account either.
      await client(again.url)
        .post('/api/v1/app/auth/login')
        .send({ account: 'ops_admin', password: 'operator-password-1' })
        .expect(401);
      // Still healthy: a stranger cannot keep the service down by taking the name.
      await client(again.url).get('/actuator/health/liveness').expect(200);
    } finally {
      await again.close();
    }
  });

  it('the CLI refuses to promote a non-admin member, with a clear message, and changes nothing', async () => {
    const env = {
      ...process.env,
      NODE_ENV: 'test',
      DATABASE_URL: app.dbUrl,
      DATA_DIR: app.dataDir,
      JWT_SECRET: 'test-secret-test-secret-test-secret-0123456789',
      ADMIN_PASSWORD: '',
    };
    for (const args of [['ops_admin'], ['ops_admin', '--reset-password']]) {
      await expect(createAdminCommand(args, env, Readable.from(['operator-password-1\n']))).rejects.toThrow(
        /not an admin/,
      );
    }
    expect((await roles()).map((r) => r.includes('admin'))).toEqual([false]);
    await attackerToken(app.url);
    // A fresh name works, and --reset-password then resets that admin's own password.
    expect(await createAdminCommand(['ops_admin_2'], env, Readable.from(['operator-password-1\n']))).toMatch(
      /admin ops_admin_2 created/,
    );
    // Whoever knew the old password and logged in with it is logged out by the reset, as by a member's own reset.
    const before = await Promise.all(
      [1, 2].map(
        async () =>
          (
            await client(app.url)
              .post('/api/v1/app/auth/login')
              .send({ account: 'ops_admin_2', password: 'operator-password-1' })
              .expect(200)
          ).body.data,
      ),
    );
    expect(
      await createAdminCommand(['ops_admin_2', '--reset-password'], env, Readable.from(['operator-password-2\n'])),
    ).toMatch(/password reset, 2 session\(s\) ended/);
    for (const { refreshToken } of before)
      await client(app.url).post('/api/v1/app/auth/refresh-token').send({ refreshToken }).expect(401);
    const live = await db.query(
      `SELECT count(*)::int AS n FROM member_sessions s JOIN members m ON m.id = s.member_id WHERE m.username = 'ops_admin_2' AND s.revoked_time IS NULL`,
    );
    expect(live.rows[0].n).toBe(0);
    await client(app.url)
      .post('/api/v1/app/auth/login')
      .send({ account: 'ops_admin_2', password: 'operator-password-1' })
      .expect(401);
    await client(app.url)
      .post('/api/v1/app/auth/login')
      .send({ account: 'ops_admin_2', password: 'operator-password-2' })
      .expect(200);
  });
});
