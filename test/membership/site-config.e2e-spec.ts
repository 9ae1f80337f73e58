import { Readable } from 'stream';
import { Client } from 'pg';
import { createAdminCommand } from '../../apps/membership/src/members/admin.cli';
import { createMembershipApp } from '../../apps/membership/src/membership.app';
import { RunningApp, startMembership } from '../support/apps';
import { sqlClient } from '../support/database';
import { bearer, client } from './fakes';

const PUBLIC = '/api/v1/admin/system/site-config/public';
const ADMIN = '/api/v1/admin/system/site-config';

async function login(app: RunningApp, account: string, password: string): Promise<string> {
  return (await client(app.url).post('/api/v1/app/auth/login').send({ account, password }).expect(200)).body.data.token;
}

describe('membership: site configuration and admin bootstrap', () => {
  let app: RunningApp;
  let db: Client;

  beforeAll(async () => {
    app = await startMembership({ ADMIN_ACCOUNT: 'site_admin', ADMIN_PASSWORD: 'admin-password-1' });
    db = await sqlClient(app.dbUrl);
  });
  afterAll(async () => {
    await db?.end();
    await app?.close();
  });

  it('public settings need no token and carry site name, logo and favicon', async () => {
    const res = await client(app.url).get(PUBLIC).expect(200);
    expect(res.body).toEqual({
      code: 200,
      message: 'success',
      data: {
        values: expect.objectContaining({
          'site.name': 'Membership',
          'site.logo': '',
          'site.favicon': '',
          'seo.title_template': expect.any(String),
          'footer.icp': '',
        }),
      },
    });
  });

  it('the admin from ADMIN_ACCOUNT/ADMIN_PASSWORD updates settings; the public read reflects them', async () => {
    const token = await login(app, 'site_admin', 'admin-password-1');
    const profile = await client(app.url).get('/api/v1/app/auth/profile').set(bearer(token)).expect(200);
    expect(profile.body.data.roles).toEqual(['member', 'admin']);
    const res = await client(app.url)
      .put(ADMIN)
      .set(bearer(token))
      .send({
        values: {
          'site.name': 'Acme Members',
          'site.logo': '/files/2026/11/logo.png',
          'internal.notes': 'admins only',
          'footer.icp': null,
        },
      })
      .expect(200);
    expect(res.body.data.values).toMatchObject({ 'site.name': 'Acme Members', 'internal.notes': 'admins only' });
    expect(res.body.data.values['footer.icp']).toBeUndefined();
    const pub = (await client(app.url).get(PUBLIC).expect(200)).body.data.values;
    expect(pub['site.name']).toBe('Acme Members');
    expect(pub['site.logo']).toBe('/files/2026/11/logo.png');
    expect(pub['internal.notes']).toBeUndefined();
    const all = await client(app.url).get(ADMIN).set(bearer(token)).expect(200);
    expect(all.body.data.values['internal.notes']).toBe('admins only');
  });

  it('writes need a token (401) and the admin role (403)', async () => {
    await client(app.url)
      .put(ADMIN)
      .send({ values: { 'site.name': 'x' } })
      .expect(401);
    await client(app.url)
      .post('/api/v1/app/auth/register')
      .send({ username: 'plain_member', password: 'member-password' })
      .expect(200);
    const reg = await client(app.url)
      .post('/api/v1/app/auth/login')
      .send({ account: 'plain_member', password: 'member-password' })
      .expect(200);
    const res = await client(app.url)
      .put(ADMIN)
      .set(bearer(reg.body.data.token))
      .send({ values: { 'site.name': 'hijacked' } })
      .expect(403);
    expect(res.body.code).toBe(403);
    await client(app.url).get(ADMIN).set(bearer(reg.body.data.token)).expect(403);
    expect((await client(app.url).get(PUBLIC).expect(200)).body.data.values['site.name']).not.toBe('hijacked');
  });

  it('refuses bad keys and values with 10000', async () => {
    const token = await login(app, 'site_admin', 'admin-password-1');
    for (const body of [
      {},
      { values: 'x' },
      { values: {} },
      { values: { 'Bad Key': 'x' } },
      { values: { 'site.name': 5 } },
      { values: { 'site.name': 'x'.repeat(4001) } },
      { values: { 'site.name': 'ok' }, extra: 1 },
    ]) {
      const res = await client(app.url).put(ADMIN).set(bearer(token)).send(body).expect(400);
      expect(res.body.code).toBe(10000);
    }
  });

  it('restarting with ADMIN_* set again keeps a changed admin password', async () => {
    const token = await login(app, 'site_admin', 'admin-password-1');
    await client(app.url)
      .put('/api/v1/app/auth/password')
      .set(bearer(token))
      .send({ oldPassword: 'admin-password-1', newPassword: 'admin-password-2' })
      .expect(200);
    const again = await startMembership(
      { ADMIN_ACCOUNT: 'site_admin', ADMIN_PASSWORD: 'admin-password-1' },
      { dbUrl: app.dbUrl, keepDatabase: true },
    );
    try {
      await client(again.url)
        .post('/api/v1/app/auth/login')
        .send({ account: 'site_admin', password: 'admin-password-1' })
        .expect(401);
      await login(again, 'site_admin', 'admin-password-2');
      const count = await db.query(`SELECT count(*)::int AS n FROM members WHERE lower(username) = 'site_admin'`);
      expect(count.rows[0].n).toBe(1);
    } finally {
      await again.close();
    }
  });

  it('the CLI creates an admin with the password from stdin, and never promotes an existing member', async () => {
    const env = {
      ...process.env,
      NODE_ENV: 'test',
      DATABASE_URL: app.dbUrl,
      DATA_DIR: app.dataDir,
      JWT_SECRET: 'test-secret-test-secret-test-secret-0123456789',
      ADMIN_PASSWORD: '',
    };
    const out = await createAdminCommand(['cli_admin'], env, Readable.from(['cli-password-1\n']));
    expect(out).toMatch(/admin cli_admin created/);
    const token = await login(app, 'cli_admin', 'cli-password-1');
    await client(app.url)
      .put(ADMIN)
      .set(bearer(token))
      .send({ values: { 'site.description': 'by cli admin' } })
      .expect(200);
    await expect(createAdminCommand(['plain_member'], env, Readable.from(['another-password\n']))).rejects.toThrow(
      /not an admin/,
    );
    await login(app, 'plain_member', 'member-password');
    await expect(createAdminCommand(['x'], env, Readable.from(['p\n']))).rejects.toThrow(/usage/);
    await expect(createAdminCommand(['short_pw'], env, Readable.from(['short\n']))).rejects.toThrow(/8 to 128/);
  });

  it('refuses a half-configured bootstrap at boot', async () => {
    await expect(
      createMembershipApp({ NODE_ENV: 'test', DATABASE_URL: app.dbUrl, ADMIN_ACCOUNT: 'lonely_admin' }),
    ).rejects.toThrow(/ADMIN_ACCOUNT\/ADMIN_PASSWORD: set both or neither/);
  });
});
