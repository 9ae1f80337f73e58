import { Client } from 'pg';
import { ConfigError } from '@app/platform';
import { createMembershipApp } from '../../apps/membership/src/membership.app';
import { RunningApp, startMembership } from '../support/apps';
import { FakeClock } from '../support/clock';
import { sqlClient } from '../support/database';
import { bearer, client, FakeAliyun, FakeSmtp, startFakeAliyun, startFakeSmtp } from './fakes';

const SEND = '/api/v1/app/auth/send-code';
const VERIFY = '/api/v1/app/auth/verify-code';
const PHONE_LOGIN = '/api/v1/app/auth/login-by-phone';
const RESET = '/api/v1/app/auth/reset-password';

// Cooldowns and locks end by the app's clock, which the tests move; the daily counters run on real time (a day).
const RESEND_MS = 60_000;
const CODE_LOCK_MS = 900_000;

const wrongCode = (code: string) => String((Number(code) + 1) % 1_000_000).padStart(6, '0');

describe('membership: verification codes, phone login, password reset', () => {
  let app: RunningApp;
  let sms: FakeAliyun;
  let smtp: FakeSmtp;
  let db: Client;
  let phoneSeq = 0;
  const newPhone = () => `1370000${String(++phoneSeq).padStart(4, '0')}`;
  const clock = new FakeClock();

  beforeAll(async () => {
    [sms, smtp] = await Promise.all([startFakeAliyun(), startFakeSmtp()]);
    app = await startMembership(
      {
        ...sms.env,
        ...smtp.env,
        CODE_RESEND_INTERVAL_MS: String(RESEND_MS),
        CODE_DAILY_LIMIT_PER_TARGET: '4',
        CODE_DAILY_LIMIT_PER_IP: '30',
        CODE_LOCK_MS: String(CODE_LOCK_MS),
      },
      { clock },
    );
    db = await sqlClient(app.dbUrl);
  });
  afterAll(async () => {
    await db?.end();
    await app?.close();
    await Promise.all([sms?.close(), smtp?.close()]);
  });

  it('sends an SMS through the Aliyun API and stores only a keyed hash of the code', async () => {
    const phone = newPhone();
    const res = await client(app.url).post(SEND).send({ type: 'sms', phone }).expect(200);
    expect(res.body.data).toEqual({ expiresIn: 300000, resendIn: RESEND_MS });
    const code = sms.lastCode(phone);
    expect(code).toMatch(/^\d{6}$/);
    const row = (
      await db.query(
        `SELECT code_hash, max_attempts, expires_time - created_time AS ttl FROM verification_codes WHERE target = $1`,
        [phone],
      )
    ).rows[0];
    expect(row.code_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(row.code_hash).not.toContain(code);
    expect(row.max_attempts).toBe(5);
  });

  it('verify-code does not use the code up; login-by-phone does; the first phone login registers', async () => {
    const c = client(app.url);
    const phone = newPhone();
    await c.post(SEND).send({ type: 'sms', phone }).expect(200);
    const code = sms.lastCode(phone);
    expect((await c.post(VERIFY).send({ type: 'sms', phone, code }).expect(200)).body.data).toEqual({ valid: true });
    await c.post(VERIFY).send({ type: 'sms', phone, code }).expect(200);
    const login = await c.post(PHONE_LOGIN).send({ phone, code }).expect(200);
    expect(login.body.data).toMatchObject({ memberId: expect.any(String), tokenType: 'Bearer', expiresIn: 1800000 });
    const profile = await c.get('/api/v1/app/auth/profile').set(bearer(login.body.data.token)).expect(200);
    expect(profile.body.data.phone).toBe(phone);
    // Used up now.
    const again = await c.post(PHONE_LOGIN).send({ phone, code }).expect(400);
    expect(again.body.code).toBe(10003);
    await c.post(VERIFY).send({ type: 'sms', phone, code }).expect(400);
    // A second login of the same phone signs into the same member.
    clock.advance(RESEND_MS);
    await c.post(SEND).send({ type: 'sms', phone }).expect(200);
    const second = await c
      .post(PHONE_LOGIN)
      .send({ phone, code: sms.lastCode(phone) })
      .expect(200);
    expect(second.body.data.memberId).toBe(login.body.data.memberId);
  });

  it('a new code replaces the old one', async () => {
    const c = client(app.url);
    const phone = newPhone();
    await c.post(SEND).send({ type: 'sms', phone }).expect(200);
    const first = sms.lastCode(phone);
    clock.advance(RESEND_MS);
    await c.post(SEND).send({ type: 'sms', phone }).expect(200);
    const second = sms.lastCode(phone);
    if (first !== second) await c.post(VERIFY).send({ type: 'sms', phone, code: first }).expect(400);
    await c.post(VERIFY).send({ type: 'sms', phone, code: second }).expect(200);
  });

  it('parallel wrong guesses cannot exceed the 5-try budget; then the right code fails and the target is locked', async () => {
    const phone = newPhone();
    await client(app.url).post(SEND).send({ type: 'sms', phone }).expect(200);
    const code = sms.lastCode(phone);
    const wrong = wrongCode(code);
    const results = await Promise.all(
      Array.from({ length: 20 }, () => client(app.url).post(VERIFY).send({ type: 'sms', phone, code: wrong })),
    );
    expect(results.every((r) => r.status === 400 || r.status === 423)).toBe(true);
    const row = (await db.query(`SELECT attempts FROM verification_codes WHERE target = $1`, [phone])).rows[0];
    expect(row.attempts).toBe(5);
    // Budget spent: even the right code is refused, and the phone is locked (no new code either).
    const right = await client(app.url).post(PHONE_LOGIN).send({ phone, code });
    expect([400, 423]).toContain(right.status);
    const locked = await client(app.url).post(SEND).send({ type: 'sms', phone }).expect(423);
    expect(locked.body.code).toBe(10008);
    expect(Number(locked.headers['retry-after'])).toBe(CODE_LOCK_MS / 1000);
    const sentBefore = sms.sent.length;
    // Still locked a second before CODE_LOCK_MS is up; a new code goes out once it is.
    clock.advance(CODE_LOCK_MS - 1000);
    expect(
      Number((await client(app.url).post(SEND).send({ type: 'sms', phone }).expect(423)).headers['retry-after']),
    ).toBe(1);
    expect(sms.sent.length).toBe(sentBefore);
    clock.advance(1000);
    await client(app.url).post(SEND).send({ type: 'sms', phone }).expect(200);
    expect(sms.sent.length).toBe(sentBefore + 1);
    await client(app.url)
      .post(PHONE_LOGIN)
      .send({ phone, code: sms.lastCode(phone) })
      .expect(200);
  });

  it('tells how many tries are left and refuses a well-formed but wrong code with 10003', async () => {
    const phone = newPhone();
    await client(app.url).post(SEND).send({ type: 'sms', phone }).expect(200);
    const res = await client(app.url)
      .post(VERIFY)
      .send({ type: 'sms', phone, code: wrongCode(sms.lastCode(phone)) })
      .expect(400);
    expect(res.body).toEqual({
      code: 10003,
      message: 'Verification code is wrong, expired or used up (4 tries left)',
      data: null,
    });
    // Never sent a code to this phone.
    expect(
      (await client(app.url).post(VERIFY).send({ type: 'sms', phone: newPhone(), code: '123456' }).expect(400)).body
        .code,
    ).toBe(10003);
  });

  it('resend interval per target: 429 with Retry-After until CODE_RESEND_INTERVAL_MS is up', async () => {
    const phone = newPhone();
    await client(app.url).post(SEND).send({ type: 'sms', phone }).expect(200);
    const res = await client(app.url).post(SEND).send({ type: 'sms', phone }).expect(429);
    expect(res.body.code).toBe(429);
    expect(Number(res.headers['retry-after'])).toBe(RESEND_MS / 1000);
    clock.advance(RESEND_MS - 1000);
    expect(
      Number((await client(app.url).post(SEND).send({ type: 'sms', phone }).expect(429)).headers['retry-after']),
    ).toBe(1);
    clock.advance(1000);
    await client(app.url).post(SEND).send({ type: 'sms', phone }).expect(200);
  });

  it('daily cap per target: 429 after CODE_DAILY_LIMIT_PER_TARGET sends', async () => {
    const phone = newPhone();
    for (let i = 0; i < 4; i++) {
      await client(app.url).post(SEND).send({ type: 'sms', phone }).expect(200);
      clock.advance(RESEND_MS);
    }
    const res = await client(app.url).post(SEND).send({ type: 'sms', phone }).expect(429);
    expect(res.body.message).toMatch(/Daily code limit/);
    expect(Number(res.headers['retry-after'])).toBeGreaterThan(3600);
  });

  it('daily cap per client IP across targets', async () => {
    const capped = await startMembership({ ...sms.env, CODE_DAILY_LIMIT_PER_IP: '3' });
    try {
      const c = client(capped.url);
      for (let i = 0; i < 3; i++) await c.post(SEND).send({ type: 'sms', phone: newPhone() }).expect(200);
      const res = await c.post(SEND).send({ type: 'sms', phone: newPhone() }).expect(429);
      expect(res.body.message).toMatch(/this client/);
      await client(capped.url).post(SEND).send({ type: 'sms', phone: newPhone() }).expect(200);
    } finally {
      await capped.close();
    }
  });

  it('an expired code is refused', async () => {
    const quickClock = new FakeClock();
    const quick = await startMembership({ ...sms.env, CODE_TTL_MS: '1000' }, { clock: quickClock });
    try {
      const phone = newPhone();
      await client(quick.url).post(SEND).send({ type: 'sms', phone }).expect(200);
      const code = sms.lastCode(phone);
      // Good for CODE_TTL_MS by the app's clock (verify-code leaves it usable), refused from then on.
      quickClock.advance(999);
      await client(quick.url).post(VERIFY).send({ type: 'sms', phone, code }).expect(200);
      quickClock.advance(1);
      expect((await client(quick.url).post(PHONE_LOGIN).send({ phone, code }).expect(400)).body.code).toBe(10003);
    } finally {
      await quick.close();
    }
  });

  it('the vendor refusing is 10004 / 502, and the member may retry at once', async () => {
    const phone = newPhone();
    sms.failWith = 'isv.BUSINESS_LIMIT_CONTROL';
    try {
      const res = await client(app.url).post(SEND).send({ type: 'sms', phone }).expect(502);
      expect(res.body).toEqual({ code: 10004, message: expect.any(String), data: null });
      expect(res.body.message).not.toMatch(/\d{6}/);
    } finally {
      sms.failWith = null;
    }
    await client(app.url).post(SEND).send({ type: 'sms', phone }).expect(200);
  });

  it('an unreachable SMTP server is 10004', async () => {
    const broken = await startMembership({ SMTP_HOST: '127.0.0.1', SMTP_PORT: '1', SMTP_FROM: 'x@site.test' });
    try {
      expect(
        (await client(broken.url).post(SEND).send({ type: 'email', email: 'who@example.com' }).expect(502)).body.code,
      ).toBe(10004);
    } finally {
      await broken.close();
    }
  });

  it('validates send-code bodies with 10000', async () => {
    for (const body of [
      {},
      { type: 'fax', phone: '13700000000' },
      { type: 'sms' },
      { type: 'sms', phone: '+1 555 0100' },
      { type: 'email', email: 'nope' },
      { type: 'email' },
    ]) {
      const res = await client(app.url).post(SEND).send(body).expect(400);
      expect(res.body.code).toBe(10000);
    }
    expect(
      (await client(app.url).post(PHONE_LOGIN).send({ phone: '13700000000', code: '12ab56' }).expect(400)).body.message,
    ).toMatch(/code/);
  });

  it('email code by SMTP, then reset-password ends every session', async () => {
    const c = client(app.url);
    const email = 'reset.me@example.com';
    await c
      .post('/api/v1/app/auth/register')
      .send({ username: 'reset_me', email, password: 'old-password-1' })
      .expect(200);
    const reg = await c.post('/api/v1/app/auth/login').send({ account: email, password: 'old-password-1' }).expect(200);
    await c.post(SEND).send({ type: 'email', email: 'Reset.Me@Example.com' }).expect(200);
    const mail = smtp.mails.at(-1)!;
    expect(mail.to).toBe(email);
    const code = smtp.lastCode(email);
    // verify-code first (the old system used the code up here, breaking the reset that follows).
    await c.post(VERIFY).send({ type: 'email', email, code }).expect(200);
    const bad = await c
      .post(RESET)
      .send({ type: 'email', email, code: wrongCode(code), newPassword: 'new-password-1' })
      .expect(400);
    expect(bad.body.code).toBe(10003);
    const ok = await c.post(RESET).send({ type: 'email', email, code, newPassword: 'new-password-1' }).expect(200);
    expect(ok.body.data).toEqual({ revokedSessions: 1 });
    await c.get('/api/v1/app/auth/profile').set(bearer(reg.body.data.token)).expect(401);
    await c.post('/api/v1/app/auth/login').send({ account: 'reset_me', password: 'old-password-1' }).expect(401);
    await c.post('/api/v1/app/auth/login').send({ account: email, password: 'new-password-1' }).expect(200);
    // The code is used up.
    await c.post(RESET).send({ type: 'email', email, code, newPassword: 'new-password-2' }).expect(400);
  });

  it('reset-password by SMS for a phone without a member is 404 after a valid code', async () => {
    const phone = newPhone();
    await client(app.url).post(SEND).send({ type: 'sms', phone }).expect(200);
    const res = await client(app.url)
      .post(RESET)
      .send({ type: 'sms', phone, code: sms.lastCode(phone), newPassword: 'whatever-123' })
      .expect(404);
    expect(res.body.code).toBe(404);
  });

  it('phone login without auto-registration refuses unknown phones with 10002', async () => {
    const strict = await startMembership({ ...sms.env, PHONE_LOGIN_AUTO_REGISTER: 'false' });
    try {
      const phone = newPhone();
      await client(strict.url).post(SEND).send({ type: 'sms', phone }).expect(200);
      expect(
        (
          await client(strict.url)
            .post(PHONE_LOGIN)
            .send({ phone, code: sms.lastCode(phone) })
            .expect(401)
        ).body.code,
      ).toBe(10002);
    } finally {
      await strict.close();
    }
  });

  it('the log senders are refused in production', async () => {
    const env = { NODE_ENV: 'production', JWT_SECRET: 'x'.repeat(40), DATABASE_URL: app.dbUrl, SMS_PROVIDER: 'log' };
    await expect(createMembershipApp(env)).rejects.toThrow(ConfigError);
    await expect(createMembershipApp(env)).rejects.toThrow(/SMS_PROVIDER: the log sender is refused/);
  });
});
