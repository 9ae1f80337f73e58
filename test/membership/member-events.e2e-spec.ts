/**
 * Membership's own events over real HTTP and PostgreSQL, received by a loopback receiver that verifies
 * every signature with `standardwebhooks`: member.registered (password, phone code, admin bootstrap),
 * member.login_locked with the lock that starts (once per lock, audit row by the system), and
 * member.factor_changed with a member's own factor changes (one audit row each, the member as actor);
 * the admin bootstrap and `npm run admin:create` leave audit rows by the system and the CLI's user.
 */
import { userInfo } from 'os';
import { Readable } from 'stream';
import { Client } from 'pg';
import { Secret, TOTP } from 'otpauth';
import { createAdminCommand } from '../../apps/membership/src/members/admin.cli';
import { RunningApp, startMembership } from '../support/apps';
import { FakeClock } from '../support/clock';
import { sqlClient } from '../support/database';
import { until } from '../support/until';
import { WebhookReceiver } from '../support/webhook-receiver';
import { bearer, client, FakeAliyun, startFakeAliyun } from './fakes';

const AUTH = '/api/v1/app/auth';
const SEC = '/api/v1/app/security';
const STEP_MS = 30_000;
const PASSWORD = 'member-events-pass';

describe('membership: member events and the audit rows of sign-in locks, factors and the admin bootstrap', () => {
  // Mid-step, so "the current step" of a TOTP code cannot change under a test that does not move the clock.
  const clock = new FakeClock(Math.floor(Date.now() / STEP_MS) * STEP_MS + 10_000);
  let app: RunningApp;
  let db: Client;
  let sms: FakeAliyun;
  let receiver: WebhookReceiver;
  let env: Record<string, string>;
  const run = Date.now().toString(36).slice(-5);

  const codeAt = (secret: string, at = clock.now()) =>
    new TOTP({ secret: Secret.fromBase32(secret), digits: 6, period: 30, algorithm: 'SHA1' }).generate({
      timestamp: at,
    });
  const audit = async (where: string, params: unknown[]) =>
    (await db.query(`SELECT * FROM audit_log WHERE ${where} ORDER BY id`, params)).rows;
  const eventsFor = (type: string, memberId: string) => receiver.of(type).filter((e) => e.data.member_id === memberId);

  beforeAll(async () => {
    receiver = await new WebhookReceiver().start();
    sms = await startFakeAliyun();
    env = {
      ...sms.env,
      ADMIN_ACCOUNT: 'ev_admin',
      ADMIN_PASSWORD: 'admin-password-1',
      WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32',
      WEBHOOK_POLL_MS: '20',
      LOGIN_MAX_FAILURES: '3',
      CODE_RESEND_INTERVAL_MS: '0',
    };
    app = await startMembership(env, { clock });
    db = await sqlClient(app.dbUrl);
    const admin = (
      await client(app.url)
        .post(`${AUTH}/login`)
        .send({ account: 'ev_admin', password: 'admin-password-1' })
        .expect(200)
    ).body.data.token;
    const created = await client(app.url)
      .post('/api/v1/admin/webhooks')
      .set(bearer(admin))
      .send({ url: receiver.url })
      .expect(200);
    receiver.setSecret(created.body.data.secret);
  });
  afterAll(async () => {
    await db?.end();
    await app?.close();
    await receiver?.close();
    await sms?.close();
  });
  afterEach(() => expect(receiver.badSignatures).toEqual([]));

  it('the admin made at boot is recorded by the system (before any endpoint existed: no event); admin:create by the CLI user, with member.registered', async () => {
    const [boot] = await audit(`action = 'member.admin_created'`, []);
    expect(boot).toMatchObject({
      actor_kind: 'system',
      actor_id: null,
      target_type: 'member',
      after: { username: 'ev_admin', roles: ['admin'] },
    });

    const cliEnv = {
      ...process.env,
      ...env,
      NODE_ENV: 'test',
      DATABASE_URL: app.dbUrl,
      JWT_SECRET: 'test-secret-test-secret-test-secret-0123456789',
      MFA_REQUIRED_ROLES: 'none',
      LOG_LEVEL: 'silent',
    };
    await createAdminCommand([`ev_cli_${run}`], cliEnv, Readable.from(['cli-password-12\n']));
    const [made] = await audit(`action = 'member.admin_created' AND after->>'username' = $1`, [`ev_cli_${run}`]);
    expect(made).toMatchObject({ actor_kind: 'cli', actor_id: userInfo().username, target_type: 'member' });
    await createAdminCommand([`ev_cli_${run}`, '--reset-password'], cliEnv, Readable.from(['cli-password-34\n']));
    const reset = await audit(`action = 'member.password_reset' AND target_id = $1`, [made.target_id]);
    expect(reset).toHaveLength(1);
    expect(reset[0]).toMatchObject({ actor_kind: 'cli', actor_id: userInfo().username });
    expect(JSON.stringify(reset[0])).not.toContain('cli-password');

    // The command enqueued its event by the wall clock and leaves it to the service's worker, which claims by
    // the app's clock: move that past the wall clock, in whole TOTP steps so it stays mid-step.
    const behind = Date.now() - clock.now();
    if (behind >= 0) clock.advance((Math.floor(behind / STEP_MS) + 1) * STEP_MS);
    await until(() => eventsFor('member.registered', made.target_id).length > 0);
    expect(eventsFor('member.registered', made.target_id)[0].data).toEqual({
      member_id: made.target_id,
      username: `ev_cli_${run}`,
      nickname: `ev_cli_${run}`,
      method: 'admin_bootstrap',
      registered_at: expect.any(String),
    });
  });

  it('member.registered for a password sign-up and a first phone-code sign-in, once each, with the member insert', async () => {
    const c = client(app.url);
    const reg = await c
      .post(`${AUTH}/register`)
      .send({ username: `ev_pw_${run}`, password: PASSWORD, nickname: 'Pat' })
      .expect(200);
    const byPassword = String(reg.body.data.memberId);
    const phone = `137${String(Date.now()).slice(-8)}`;
    await c.post(`${AUTH}/send-code`).send({ type: 'sms', phone }).expect(200);
    const first = await c
      .post(`${AUTH}/login-by-phone`)
      .send({ phone, code: sms.lastCode(phone) })
      .expect(200);
    const byPhone = String(first.body.data.memberId);
    // A second sign-in of the same phone creates nobody.
    await c.post(`${AUTH}/send-code`).send({ type: 'sms', phone }).expect(200);
    await c
      .post(`${AUTH}/login-by-phone`)
      .send({ phone, code: sms.lastCode(phone) })
      .expect(200);
    // A refused sign-up (name taken) sends nothing.
    await c
      .post(`${AUTH}/register`)
      .send({ username: `ev_pw_${run}`, password: PASSWORD })
      .expect(409);

    await until(
      () => eventsFor('member.registered', byPassword).length > 0 && eventsFor('member.registered', byPhone).length > 0,
    );
    const [pw] = eventsFor('member.registered', byPassword);
    expect(pw.data).toEqual({
      member_id: byPassword,
      username: `ev_pw_${run}`,
      nickname: 'Pat',
      method: 'password',
      registered_at: new Date(clock.now()).toISOString(),
    });
    expect(eventsFor('member.registered', byPhone)[0].data).toMatchObject({ member_id: byPhone, method: 'phone_code' });
    expect(JSON.stringify(eventsFor('member.registered', byPhone))).not.toContain(phone);
    const stored = (
      await db.query(`SELECT payload->'data'->>'member_id' AS id FROM webhook_events WHERE type = 'member.registered'`)
    ).rows.map((r) => r.id);
    expect(stored.filter((id) => id === byPassword || id === byPhone).sort()).toEqual([byPassword, byPhone].sort());
  });

  it('the failure that starts a sign-in lock records it once: an audit row by the system on the member, and member.login_locked', async () => {
    const username = `ev_lock_${run}`;
    const memberId = String(
      (await client(app.url).post(`${AUTH}/register`).send({ username, password: PASSWORD }).expect(200)).body.data
        .memberId,
    );
    const attacker = client(app.url, '198.51.100.77');
    for (let i = 0; i < 3; i++)
      await attacker.post(`${AUTH}/login`).send({ account: username, password: 'wrong-password' }).expect(401);
    // Locked now: further tries are refused without counting, and record nothing more.
    for (let i = 0; i < 2; i++)
      expect(
        (await attacker.post(`${AUTH}/login`).send({ account: username, password: 'wrong-password' })).body.code,
      ).toBe(10008);
    const rows = await audit(`action = 'member.login_locked' AND target_id = $1`, [memberId]);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      actor_kind: 'system',
      actor_id: null,
      target_type: 'member',
      address: '198.51.100.77',
      after: { scope: 'account_address', failures: 3, lockedUntil: expect.any(String) },
    });
    await until(() => eventsFor('member.login_locked', memberId).length > 0);
    expect(eventsFor('member.login_locked', memberId)).toHaveLength(1);
    expect(eventsFor('member.login_locked', memberId)[0].data).toEqual({
      member_id: memberId,
      scope: 'account_address',
      address: '198.51.100.77',
      failures: 3,
      locked_until: rows[0].after.lockedUntil,
    });
    // Wrong passwords for a name nobody has lock it too, but nobody is recorded.
    const stranger = client(app.url, '198.51.100.78');
    for (let i = 0; i < 4; i++)
      await stranger.post(`${AUTH}/login`).send({ account: `nobody_${run}`, password: 'wrong-password' });
    expect(await audit(`action LIKE '%login_locked' AND address = '198.51.100.78'`, [])).toEqual([]);
  });

  it("a member's own factor changes: one audit row each by the member, and member.factor_changed, in the change's transaction", async () => {
    const username = `ev_tf_${run}`;
    const c = client(app.url);
    await c.post(`${AUTH}/register`).send({ username, password: PASSWORD }).expect(200);
    const login = (await c.post(`${AUTH}/login`).send({ account: username, password: PASSWORD }).expect(200)).body.data;
    const memberId = String(login.memberId);
    const begun = await c.post(`${SEC}/totp`).set(bearer(login.token)).expect(200);
    const secret = begun.body.data.secret as string;
    // A wrong first code changes nothing and records nothing.
    await c
      .post(`${SEC}/totp/confirm`)
      .set(bearer(login.token))
      .send({ code: codeAt(secret, clock.now() + 9 * STEP_MS) })
      .expect(401);
    await c
      .post(`${SEC}/totp/confirm`)
      .set(bearer(login.token))
      .send({ code: codeAt(secret) })
      .expect(200);
    clock.advance(STEP_MS);
    const stepped = await c
      .post(`${AUTH}/step-up`)
      .set(bearer(login.token))
      .send({ method: 'totp', code: codeAt(secret) })
      .expect(200);
    const token = stepped.body.data.token as string;
    await c.post(`${SEC}/recovery-codes`).set(bearer(token)).expect(200);
    await c.delete(`${SEC}/totp`).set(bearer(token)).expect(200);
    await c.delete(`${SEC}/totp`).set(bearer(token)).expect(409);

    const rows = await audit(`action = 'member.factor_changed' AND target_id = $1`, [memberId]);
    expect(rows.map((r) => r.after)).toEqual([
      { change: 'totp_enabled', firstFactor: true },
      { change: 'recovery_codes_regenerated' },
      { change: 'totp_disabled' },
    ]);
    for (const r of rows)
      expect(r).toMatchObject({
        actor_kind: 'member',
        actor_id: memberId,
        target_type: 'member',
        request_id: expect.any(String),
      });
    expect(JSON.stringify(rows)).not.toContain(secret);

    await until(() => eventsFor('member.factor_changed', memberId).length === 3);
    expect(eventsFor('member.factor_changed', memberId).map((e) => e.data)).toEqual(
      ['totp_enabled', 'recovery_codes_regenerated', 'totp_disabled'].map((change) => ({
        member_id: memberId,
        change,
        by: { kind: 'member', id: memberId },
      })),
    );
  });
});
