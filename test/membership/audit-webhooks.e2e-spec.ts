import { RunningApp, startMembership } from '../support/apps';
import { queryRows } from '../support/database';
import { bearer, client } from './fakes';

async function login(app: RunningApp, account: string, password: string): Promise<string> {
  return (await client(app.url).post('/api/v1/app/auth/login').send({ account, password }).expect(200)).body.data.token;
}

describe('membership: audit log and webhook endpoints (admin)', () => {
  let app: RunningApp;
  let admin: string;

  beforeAll(async () => {
    // No WEBHOOK_ALLOWED_CIDRS: loopback targets must be refused.
    app = await startMembership({ ADMIN_ACCOUNT: 'audit_admin', ADMIN_PASSWORD: 'admin-password-1' });
    admin = await login(app, 'audit_admin', 'admin-password-1');
  });
  afterAll(() => app?.close());

  it("a site settings change leaves one audit row by the admin member, with the keys' old and new values", async () => {
    await client(app.url)
      .put('/api/v1/admin/system/site-config')
      .set(bearer(admin))
      .set('X-Request-Id', 'req-site-1')
      .send({ values: { 'site.name': 'Audited' } })
      .expect(200);
    const rows = await queryRows(app.dbUrl, `SELECT * FROM audit_log WHERE action = 'site_config.updated'`);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      actor_kind: 'member',
      target_type: 'site_config',
      request_id: 'req-site-1',
      address: expect.stringMatching(/^[0-9.]+$/),
      before: { 'site.name': 'Membership' },
      after: { 'site.name': 'Audited' },
    });
    const profile = await client(app.url).get('/api/v1/app/auth/profile').set(bearer(admin)).expect(200);
    expect(rows[0].actor_id).toBe(String(profile.body.data.id));

    const list = await client(app.url)
      .get('/api/v1/admin/audit-log?action=site_config.updated')
      .set(bearer(admin))
      .expect(200);
    expect(list.body.data.data).toHaveLength(1);
    expect(list.body.data.data[0]).toMatchObject({
      action: 'site_config.updated',
      actor: { kind: 'member' },
      request_id: 'req-site-1',
    });
    const bad = await client(app.url)
      .get('/api/v1/admin/audit-log?cursor=x')
      .set(bearer(admin))
      .set('Accept-Language', 'zh-CN')
      .expect(400);
    expect(bad.body.code).toBe(10000);
    const csv = await client(app.url).get('/api/v1/admin/audit-log/export?format=csv').set(bearer(admin)).expect(200);
    expect(csv.headers['content-type']).toMatch(/text\/csv/);
    expect(csv.text).toContain('site_config.updated');
  });

  it('a member without the admin role gets 403 on the audit log and webhooks', async () => {
    await client(app.url)
      .post('/api/v1/app/auth/register')
      .send({ username: 'plain_auditee', password: 'member-password' })
      .expect(200);
    const member = await login(app, 'plain_auditee', 'member-password');
    expect((await client(app.url).get('/api/v1/admin/audit-log').set(bearer(member)).expect(403)).body.code).toBe(403);
    await client(app.url).get('/api/v1/admin/webhooks').set(bearer(member)).expect(403);
  });

  it('the public-address guard refuses 127.0.0.1 unless WEBHOOK_ALLOWED_CIDRS names it', async () => {
    const res = await client(app.url)
      .post('/api/v1/admin/webhooks')
      .set(bearer(admin))
      .send({ url: 'http://127.0.0.1:9/hook' })
      .expect(400);
    expect(res.body.code).toBe(10000);
    expect(res.body.data.fields[0].field).toBe('url');
    const zh = await client(app.url)
      .post('/api/v1/admin/webhooks')
      .set(bearer(admin))
      .set('Accept-Language', 'zh-CN')
      .send({ url: 'http://127.0.0.1:9/hook' })
      .expect(400);
    expect(zh.body.message).toContain('Webhook');
    await client(app.url)
      .post('/api/v1/admin/webhooks')
      .set(bearer(admin))
      .send({ url: 'https://hooks.example.com/x', events: ['key.created'] })
      .expect(400);
    await client(app.url).get('/api/v1/admin/webhooks/not-an-id').set(bearer(admin)).expect(404);

    const allowed = await startMembership({
      ADMIN_ACCOUNT: 'audit_admin2',
      ADMIN_PASSWORD: 'admin-password-1',
      WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32',
      WEBHOOK_WORKER: 'false',
    });
    try {
      const token = await login(allowed, 'audit_admin2', 'admin-password-1');
      const created = await client(allowed.url)
        .post('/api/v1/admin/webhooks')
        .set(bearer(token))
        .send({ url: 'http://127.0.0.1:9/hook', events: ['member.registered'] })
        .expect(200);
      expect(created.body.data.secret).toMatch(/^whsec_/);
      const rows = await queryRows(allowed.dbUrl, `SELECT * FROM audit_log WHERE action = 'webhook_endpoint.created'`);
      expect(rows).toHaveLength(1);
      expect(JSON.stringify(rows[0])).not.toContain('whsec_');
    } finally {
      await allowed.close();
    }
  });
});
