/**
 * The members admin API over real HTTP and PostgreSQL: search and pagination, a member's profile,
 * sessions (sign out one or all), identities, factors (reset), disable/enable (tokens and refresh refused
 * at once), operator roles (viewer reads, writes nothing); each write leaves exactly one audit row.
 */
import { Client } from 'pg';
import { Secret, TOTP } from 'otpauth';
import { RunningApp, startMembership } from '../support/apps';
import { sqlClient } from '../support/database';
import { bearer, client } from './fakes';

const AUTH = '/api/v1/app/auth';
const SEC = '/api/v1/app/security';
const MEMBERS = '/api/v1/admin/members';
const PASSWORD = 'members-admin-pass';

describe('membership: members admin API', () => {
  let app: RunningApp;
  let db: Client;
  let adminToken = '';
  let adminId = '';
  let viewerToken = '';
  let viewerId = '';
  const run = Date.now().toString(36).slice(-5);

  const c = () => client(app.url);
  async function register(username: string, extra: Record<string, string> = {}) {
    await c()
      .post(`${AUTH}/register`)
      .send({ username, password: PASSWORD, ...extra })
      .expect(200);
    return login(username);
  }
  async function login(username: string) {
    const res = await c().post(`${AUTH}/login`).send({ account: username, password: PASSWORD }).expect(200);
    return res.body.data as { token: string; refreshToken: string; memberId: string };
  }
  const auditRows = async (targetId: string) =>
    (
      await db.query(
        `SELECT actor_kind, actor_id, action, target_type, target_id, before, after FROM audit_log WHERE target_id = $1 ORDER BY id`,
        [targetId],
      )
    ).rows;

  beforeAll(async () => {
    app = await startMembership({ ADMIN_ACCOUNT: 'ma_admin', ADMIN_PASSWORD: PASSWORD });
    db = await sqlClient(app.dbUrl);
    const admin = await login('ma_admin');
    adminToken = admin.token;
    adminId = admin.memberId;
    const viewer = await register(`ma_viewer_${run}`);
    viewerId = viewer.memberId;
    await c().put(`${MEMBERS}/${viewerId}/role`).set(bearer(adminToken)).send({ role: 'viewer' }).expect(200);
    viewerToken = viewer.token;
  });
  afterAll(async () => {
    await db?.end();
    await app?.close();
  });

  it('searches by the start of username, email, phone or nickname (any case) and by id; paginates newest first', async () => {
    const a = await register(`ma_zed_a_${run}`, { nickname: `Quokka${run}` });
    const b = await register(`ma_zed_b_${run}`);
    await db.query(`UPDATE members SET email = $2, phone = $3 WHERE id = $1`, [
      b.memberId,
      `zebra_${run}@example.com`,
      `1390000${run.length}${String(Date.now()).slice(-3)}`,
    ]);
    const list = async (q: string, extra = '') =>
      (
        await c()
          .get(`${MEMBERS}?q=${encodeURIComponent(q)}${extra}`)
          .set(bearer(viewerToken))
          .expect(200)
      ).body.data;
    expect((await list(`MA_ZED_`)).items.map((m: any) => m.id)).toEqual([b.memberId, a.memberId]);
    expect((await list(`quokka${run}`)).items.map((m: any) => m.id)).toEqual([a.memberId]);
    expect((await list(`ZEBRA_${run}@`)).items.map((m: any) => m.id)).toEqual([b.memberId]);
    expect((await list(a.memberId)).items.map((m: any) => m.id)).toContain(a.memberId);
    // LIKE wildcards are literal.
    expect((await list('%')).items).toEqual([]);
    const page = await list('ma_zed_', '&limit=1&offset=1');
    expect(page).toMatchObject({ total: 2, offset: 1, limit: 1 });
    expect(page.items.map((m: any) => m.id)).toEqual([a.memberId]);
    expect(page.items[0]).toMatchObject({
      username: `ma_zed_a_${run}`,
      nickname: `Quokka${run}`,
      status: 'active',
      roles: [],
    });
    expect(page.items[0]).not.toHaveProperty('passwordHash');
    const bad = await c()
      .get(`${MEMBERS}?limit=1000`)
      .set(bearer(viewerToken))
      .set('Accept-Language', 'zh-CN')
      .expect(400);
    expect(bad.body.code).toBe(10000);
    // The prefix search uses its index (the planner is told to avoid a sequential scan when it can).
    await db.query('SET enable_seqscan = off');
    const plan = (await db.query(`EXPLAIN SELECT id FROM members WHERE lower(username) LIKE 'ma_zed_%'`)).rows
      .map((r) => r['QUERY PLAN'])
      .join('\n');
    await db.query('SET enable_seqscan = on');
    expect(plan).toContain('idx_members_username_search');
  });

  it("a member's profile, sessions, identities and factors; unknown members are 404 in the envelope (en and zh-CN)", async () => {
    const m = await register(`ma_prof_${run}`);
    await login(`ma_prof_${run}`);
    const profile = await c().get(`${MEMBERS}/${m.memberId}`).set(bearer(viewerToken)).expect(200);
    expect(profile.body.data).toMatchObject({
      id: m.memberId,
      username: `ma_prof_${run}`,
      status: 'active',
      emailVerified: false,
    });
    const sessions = await c().get(`${MEMBERS}/${m.memberId}/sessions`).set(bearer(viewerToken)).expect(200);
    expect(sessions.body.data).toHaveLength(2);
    expect(sessions.body.data[0]).toMatchObject({ loginType: 'password', amr: ['pwd'] });
    expect(
      (await c().get(`${MEMBERS}/${m.memberId}/identities`).set(bearer(viewerToken)).expect(200)).body.data,
    ).toEqual([]);
    // An authenticator app enrolled by the member shows (without its secret).
    const begun = await c().post(`${SEC}/totp`).set(bearer(m.token)).expect(200);
    const code = new TOTP({
      secret: Secret.fromBase32(begun.body.data.secret),
      digits: 6,
      period: 30,
      algorithm: 'SHA1',
    }).generate();
    await c().post(`${SEC}/totp/confirm`).set(bearer(m.token)).send({ code }).expect(200);
    const factors = await c().get(`${MEMBERS}/${m.memberId}/factors`).set(bearer(viewerToken)).expect(200);
    expect(factors.body.data).toEqual({
      totp: { enabled: true, createdTime: expect.any(String) },
      passkeys: [],
      recoveryCodes: { remaining: 10 },
    });
    expect(JSON.stringify(factors.body)).not.toContain(begun.body.data.secret);
    for (const id of ['999999999', 'abc', '1'.repeat(25)]) {
      const en = await c().get(`${MEMBERS}/${id}`).set(bearer(viewerToken)).expect(404);
      expect(en.body).toEqual({ code: 404, message: 'No such member', data: null });
    }
    const zh = await c()
      .get(`${MEMBERS}/999999999/sessions`)
      .set(bearer(viewerToken))
      .set('Accept-Language', 'zh-CN')
      .expect(404);
    expect(zh.body.message).toBe('会员不存在');
  });

  it('a viewer reads every admin GET and writes nothing; a plain member reads nothing', async () => {
    const m = await register(`ma_target_${run}`);
    await c().get('/api/v1/admin/system/site-config').set(bearer(viewerToken)).expect(200);
    const writes: [string, string, object?][] = [
      ['post', `${MEMBERS}/${m.memberId}/disable`],
      ['post', `${MEMBERS}/${m.memberId}/enable`],
      ['delete', `${MEMBERS}/${m.memberId}/sessions`],
      ['delete', `${MEMBERS}/${m.memberId}/factors`],
      ['put', `${MEMBERS}/${m.memberId}/role`, { role: 'admin' }],
    ];
    for (const [method, path, body] of writes) {
      const agent = c() as any;
      const res = await agent[method](path)
        .set(bearer(viewerToken))
        .send(body ?? {});
      expect({ path, status: res.status, code: res.body.code }).toEqual({ path, status: 403, code: 403 });
    }
    const put = await c()
      .put('/api/v1/admin/system/site-config')
      .set(bearer(viewerToken))
      .send({ values: { 'site.name': 'x' } });
    expect(put.status).toBe(403);
    await c().get(MEMBERS).set(bearer(m.token)).expect(403);
    expect(await auditRows(m.memberId)).toEqual([]);
    // Control: the same writes work for an admin.
    await c().delete(`${MEMBERS}/${m.memberId}/sessions`).set(bearer(adminToken)).expect(200);
  });

  it("disable: the member's token is refused at once, refresh and sign-in too; enable lets them back; one audit row each, by the admin", async () => {
    const m = await register(`ma_dis_${run}`);
    await c().get(`${AUTH}/profile`).set(bearer(m.token)).expect(200);
    const res = await c().post(`${MEMBERS}/${m.memberId}/disable`).set(bearer(adminToken)).expect(200);
    expect(res.body.data).toMatchObject({ id: m.memberId, status: 'disabled' });
    const refused = await c().get(`${AUTH}/profile`).set(bearer(m.token)).expect(401);
    expect(refused.body.code).toBe(401);
    await c().post(`${AUTH}/refresh-token`).send({ refreshToken: m.refreshToken }).expect(401);
    const signIn = await c()
      .post(`${AUTH}/login`)
      .send({ account: `ma_dis_${run}`, password: PASSWORD });
    expect(signIn.status).not.toBe(200);
    expect((await c().get(`${MEMBERS}/${m.memberId}/sessions`).set(bearer(adminToken)).expect(200)).body.data).toEqual(
      [],
    );
    // Again: nothing changes, nothing recorded.
    await c().post(`${MEMBERS}/${m.memberId}/disable`).set(bearer(adminToken)).expect(200);
    await c().post(`${MEMBERS}/${m.memberId}/enable`).set(bearer(adminToken)).expect(200);
    await login(`ma_dis_${run}`);
    const rows = await auditRows(m.memberId);
    expect(rows).toEqual([
      {
        actor_kind: 'member',
        actor_id: adminId,
        action: 'member.disabled',
        target_type: 'member',
        target_id: m.memberId,
        before: { status: 'active' },
        after: { status: 'disabled', sessionsEnded: 1 },
      },
      {
        actor_kind: 'member',
        actor_id: adminId,
        action: 'member.enabled',
        target_type: 'member',
        target_id: m.memberId,
        before: { status: 'disabled' },
        after: { status: 'active' },
      },
    ]);
    // An admin cannot disable themself.
    const self = await c().post(`${MEMBERS}/${adminId}/disable`).set(bearer(adminToken)).expect(409);
    expect(self.body).toEqual({
      code: 409,
      message: 'You cannot disable your own account or change your own role',
      data: null,
    });
  });

  it('sessions: sign out one (the other lives on) or all', async () => {
    const first = await register(`ma_ses_${run}`);
    const second = await login(`ma_ses_${run}`);
    const sid = JSON.parse(Buffer.from(first.token.split('.')[1], 'base64url').toString()).sid as string;
    await c().delete(`${MEMBERS}/${first.memberId}/sessions/${sid}`).set(bearer(adminToken)).expect(200);
    await c().get(`${AUTH}/profile`).set(bearer(first.token)).expect(401);
    await c().get(`${AUTH}/profile`).set(bearer(second.token)).expect(200);
    await c().delete(`${MEMBERS}/${first.memberId}/sessions/${sid}`).set(bearer(adminToken)).expect(404);
    await c().delete(`${MEMBERS}/${first.memberId}/sessions/not-a-uuid`).set(bearer(adminToken)).expect(404);
    const all = await c().delete(`${MEMBERS}/${first.memberId}/sessions`).set(bearer(adminToken)).expect(200);
    expect(all.body.data).toEqual({ sessionsEnded: 1 });
    await c().get(`${AUTH}/profile`).set(bearer(second.token)).expect(401);
    expect((await auditRows(sid)).map((r) => r.action)).toEqual(['session.revoked']);
    expect((await auditRows(first.memberId)).map((r) => [r.action, r.after])).toEqual([
      ['member.sessions_revoked', { sessionsEnded: 1 }],
    ]);
  });

  it('factor reset removes the authenticator app and recovery codes: the member signs in with the password alone and can enrol again', async () => {
    const m = await register(`ma_fac_${run}`);
    const begun = await c().post(`${SEC}/totp`).set(bearer(m.token)).expect(200);
    const totp = new TOTP({
      secret: Secret.fromBase32(begun.body.data.secret),
      digits: 6,
      period: 30,
      algorithm: 'SHA1',
    });
    await c().post(`${SEC}/totp/confirm`).set(bearer(m.token)).send({ code: totp.generate() }).expect(200);
    const challenged = await c()
      .post(`${AUTH}/login`)
      .send({ account: `ma_fac_${run}`, password: PASSWORD })
      .expect(200);
    expect(challenged.body.data.mfaRequired).toBe(true);
    const reset = await c().delete(`${MEMBERS}/${m.memberId}/factors`).set(bearer(adminToken)).expect(200);
    expect(reset.body.data).toEqual({ totp: true, passkeys: 0, recoveryCodes: 10 });
    await c().get(`${AUTH}/profile`).set(bearer(m.token)).expect(401);
    const plain = await login(`ma_fac_${run}`);
    expect(plain.token).toEqual(expect.any(String));
    await c().post(`${SEC}/totp`).set(bearer(plain.token)).expect(200);
    const rows = await auditRows(m.memberId);
    // The member's own enrolment is recorded too (factors/factor-change.ts); the reset once, by the admin.
    expect(rows.map((r) => [r.actor_id, r.action, r.before])).toEqual([
      [m.memberId, 'member.factor_changed', null],
      [adminId, 'member.factors_reset', { totp: true, passkeys: 0, unusedBackupCodes: 10 }],
    ]);
  });

  it('roles: viewer, admin and none; other roles kept; not on yourself; a bad role is 400', async () => {
    const m = await register(`ma_role_${run}`);
    await db.query(`UPDATE members SET roles = '{editor}' WHERE id = $1`, [m.memberId]);
    await c().get(MEMBERS).set(bearer(m.token)).expect(403);
    const asViewer = await c()
      .put(`${MEMBERS}/${m.memberId}/role`)
      .set(bearer(adminToken))
      .send({ role: 'viewer' })
      .expect(200);
    expect(asViewer.body.data.roles).toEqual(['editor', 'viewer']);
    // Membership reads roles live: the same token reads now, and still writes nothing.
    await c().get(MEMBERS).set(bearer(m.token)).expect(200);
    await c().post(`${MEMBERS}/${m.memberId}/disable`).set(bearer(m.token)).expect(403);
    const asAdmin = await c()
      .put(`${MEMBERS}/${m.memberId}/role`)
      .set(bearer(adminToken))
      .send({ role: 'admin' })
      .expect(200);
    expect(asAdmin.body.data.roles).toEqual(['editor', 'admin']);
    await c().put(`${MEMBERS}/${m.memberId}/role`).set(bearer(adminToken)).send({ role: 'none' }).expect(200);
    await c().get(MEMBERS).set(bearer(m.token)).expect(403);
    const bad = await c()
      .put(`${MEMBERS}/${m.memberId}/role`)
      .set(bearer(adminToken))
      .send({ role: 'root' })
      .expect(400);
    expect(bad.body.code).toBe(10000);
    await c().put(`${MEMBERS}/${adminId}/role`).set(bearer(adminToken)).send({ role: 'none' }).expect(409);
    const rows = await auditRows(m.memberId);
    expect(rows.map((r) => [r.action, r.before, r.after])).toEqual([
      ['member.role_changed', { roles: ['editor'] }, { roles: ['editor', 'viewer'] }],
      ['member.role_changed', { roles: ['editor', 'viewer'] }, { roles: ['editor', 'admin'] }],
      ['member.role_changed', { roles: ['editor', 'admin'] }, { roles: ['editor'] }],
    ]);
  });
});
