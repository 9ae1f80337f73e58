/**
 * Second factors over real HTTP and PostgreSQL: the authenticator app (TOTP, with the app's Clock
 * moved by the test), recovery codes, the sign-in challenge (expiry, attempts), step-up, enforced
 * enrolment for admins, amr in tokens, and notices. Two app instances share one database: a code is
 * accepted exactly once across them. Passkeys: second-factors-passkeys.e2e-spec.ts (headless Chromium).
 */
import { Readable } from 'stream';
import { Client } from 'pg';
import request from 'supertest';
import { Secret, TOTP } from 'otpauth';
import { createAdminCommand } from '../../apps/membership/src/members/admin.cli';
import { RunningApp, startMembership } from '../support/apps';
import { FakeClock } from '../support/clock';
import { sqlClient } from '../support/database';
import { bearer, client, FakeAliyun, FakeSmtp, readMail, startFakeAliyun, startFakeSmtp } from './fakes';

const AUTH = '/api/v1/app/auth';
const SEC = '/api/v1/app/security';
const STEP_MS = 30_000;
// Counters of abuse limits live in shared state by real time: windows far longer than any run.
const LONG_MS = String(3_600_000);

/** Claims of an access token (read, not verified: the app verified it). */
function claimsOf(token: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString('utf8'));
}

describe('membership: second factors (authenticator app, recovery codes, challenge, step-up, enforcement)', () => {
  // Mid-step, so "the current step" cannot change under a test that does not move the clock.
  const clock = new FakeClock(Math.floor(Date.now() / STEP_MS) * STEP_MS + 10_000);
  let a: RunningApp;
  let b: RunningApp;
  let db: Client;
  let smtp: FakeSmtp;
  let sms: FakeAliyun;
  let run = 0;

  const codeAt = (secret: string, at = clock.now()) =>
    new TOTP({ secret: Secret.fromBase32(secret), digits: 6, period: 30, algorithm: 'SHA1' }).generate({
      timestamp: at,
    });

  /** A new member with a proven email (notices go there) and a password; signed in on `app`. */
  async function newMember(app = a, prefix = 'tf') {
    run += 1;
    const username = `${prefix}_${run}_${Date.now().toString(36)}`.slice(0, 20);
    const email = `${username}@example.com`;
    const c = client(app.url);
    await c.post(`${AUTH}/send-code`).send({ type: 'email', email }).expect(200);
    await c
      .post(`${AUTH}/register`)
      .send({ username, email, emailCode: smtp.lastCode(email), password: 'second-factor-pass' })
      .expect(200);
    const login = await c.post(`${AUTH}/login`).send({ account: username, password: 'second-factor-pass' }).expect(200);
    return { c, username, email, token: login.body.data.token as string, memberId: login.body.data.memberId as string };
  }

  /** Enrols an authenticator app for a signed-in member; its secret and recovery codes. */
  async function enrolTotp(m: { c: ReturnType<typeof client>; token: string }) {
    const begun = await m.c.post(`${SEC}/totp`).set(bearer(m.token)).expect(200);
    const secret = begun.body.data.secret as string;
    const confirmed = await m.c
      .post(`${SEC}/totp/confirm`)
      .set(bearer(m.token))
      .send({ code: codeAt(secret) })
      .expect(200);
    return { secret, recoveryCodes: confirmed.body.data.recoveryCodes as string[], begun: begun.body.data };
  }

  const challengeFor = async (m: { c: ReturnType<typeof client>; username: string }) => {
    const res = await m.c
      .post(`${AUTH}/login`)
      .send({ account: m.username, password: 'second-factor-pass' })
      .expect(200);
    return res.body.data as {
      mfaRequired: true;
      mfaToken: string;
      methods: string[];
      enrolmentRequired: boolean;
      expiresIn: number;
    };
  };

  beforeAll(async () => {
    smtp = await startFakeSmtp();
    sms = await startFakeAliyun();
    const env = {
      ...smtp.env,
      ...sms.env,
      MFA_REQUIRED_ROLES: 'admin',
      MFA_LOCK_MS: LONG_MS,
      ADMIN_ACCOUNT: 'tf_admin',
      ADMIN_PASSWORD: 'admin-password-1',
      CODE_RESEND_INTERVAL_MS: '0',
    };
    a = await startMembership(env, { clock });
    b = await startMembership(env, { clock, dbUrl: a.dbUrl, keepDatabase: true });
    db = await sqlClient(a.dbUrl);
  });
  afterAll(async () => {
    await db?.end();
    await b?.close();
    await a?.close();
    await smtp?.close();
    await sms?.close();
  });

  it('a member without a factor gets exactly the login result of before, and the token carries amr [pwd]', async () => {
    const m = await newMember();
    const res = await m.c
      .post(`${AUTH}/login`)
      .send({ account: m.username, password: 'second-factor-pass' })
      .expect(200);
    expect(Object.keys(res.body.data).sort()).toEqual([
      'avatarUrl',
      'expiresIn',
      'memberId',
      'nickname',
      'refreshExpiresIn',
      'refreshToken',
      'token',
      'tokenType',
      'username',
    ]);
    expect(claimsOf(res.body.data.token).amr).toEqual(['pwd']);
    const refreshed = await m.c
      .post(`${AUTH}/refresh-token`)
      .send({ refreshToken: res.body.data.refreshToken })
      .expect(200);
    expect(claimsOf(refreshed.body.data.token).amr).toEqual(['pwd']);
    const factors = await m.c.get(`${SEC}/factors`).set(bearer(m.token)).expect(200);
    expect(factors.body.data).toEqual({
      totp: { enabled: false, createdTime: null },
      passkeys: [],
      recoveryCodes: { remaining: 0, createdTime: null },
      stepUp: { required: null, satisfiedUntil: null },
      mfaRequiredByRole: false,
    });
  });

  it("enrols an authenticator app: secret encrypted at rest, otpauth URI naming the site, QR image; a wrong first code is refused; recovery codes once; other sessions end; a notice in the member's language", async () => {
    await db.query(`UPDATE site_settings SET value = '创客社区' WHERE key = 'site.name'`);
    try {
      const m = await newMember();
      const other = await m.c
        .post(`${AUTH}/login`)
        .send({ account: m.username, password: 'second-factor-pass' })
        .expect(200);
      const begun = await m.c.post(`${SEC}/totp`).set(bearer(m.token)).expect(200);
      const { secret, otpauthUri, qrDataUrl } = begun.body.data;
      expect(secret).toMatch(/^[A-Z2-7]{32}$/);
      expect(otpauthUri).toMatch(new RegExp(`^otpauth://totp/.+:${m.username}\\?`));
      expect(new URL(otpauthUri).searchParams.get('issuer')).toBe('创客社区');
      expect(qrDataUrl).toMatch(/^data:image\/png;base64,iVBORw0KGgo/);
      const stored = (
        await db.query('SELECT secret_sealed, confirmed_time FROM member_totp WHERE member_id = $1', [m.memberId])
      ).rows[0];
      expect(stored.confirmed_time).toBeNull();
      expect(stored.secret_sealed).not.toContain(secret);
      expect(stored.secret_sealed).toMatch(/^v1\./);

      const wrong = await m.c
        .post(`${SEC}/totp/confirm`)
        .set(bearer(m.token))
        .set('Accept-Language', 'zh-CN')
        .send({ code: codeAt(secret, clock.now() + 5 * STEP_MS) })
        .expect(401);
      expect(wrong.body).toEqual({ code: 10011, message: '验证码错误或已被使用', data: null });
      const mailsBefore = smtp.mails.length;
      const ok = await m.c
        .post(`${SEC}/totp/confirm`)
        .set(bearer(m.token))
        .set('Accept-Language', 'zh-CN')
        .send({ code: codeAt(secret) })
        .expect(200);
      expect(ok.body.data.recoveryCodes).toHaveLength(10);
      for (const code of ok.body.data.recoveryCodes) expect(code).toMatch(/^[a-z2-9]{4}-[a-z2-9]{4}-[a-z2-9]{2}$/);
      const hashes = (
        await db.query('SELECT code_hash FROM member_recovery_codes WHERE member_id = $1', [m.memberId])
      ).rows.map((r) => r.code_hash);
      expect(hashes).toHaveLength(10);
      expect(hashes.join()).not.toContain(ok.body.data.recoveryCodes[0].replace(/-/g, ''));
      // Enabling again is refused; this session lives on, the other one ended.
      await m.c.post(`${SEC}/totp`).set(bearer(m.token)).expect(409);
      await m.c.get(`${AUTH}/profile`).set(bearer(m.token)).expect(200);
      await m.c.get(`${AUTH}/profile`).set(bearer(other.body.data.token)).expect(401);
      const notice = smtp.mails.slice(mailsBefore).find((x) => x.to === m.email);
      expect(notice).toBeDefined();
      const mail = readMail(notice!.text);
      expect(mail.subject).toBe('创客社区：账号安全通知');
      expect(mail.body).toContain('您的创客社区账号已添加身份验证器应用');
    } finally {
      await db.query(`UPDATE site_settings SET value = 'Membership' WHERE key = 'site.name'`);
    }
  });

  it('signs in with a challenge instead of tokens, completed by a code; the token carries amr [pwd, otp, mfa]', async () => {
    const m = await newMember();
    const { secret } = await enrolTotp(m);
    clock.advance(STEP_MS);
    const ch = await challengeFor(m);
    expect(ch).toEqual({
      mfaRequired: true,
      mfaToken: expect.stringMatching(/^mfa_[A-Za-z0-9_-]{43}$/),
      methods: ['totp', 'recovery_code'],
      enrolmentRequired: false,
      expiresIn: 300_000,
    });
    const done = await m.c
      .post(`${AUTH}/mfa/verify`)
      .send({ mfaToken: ch.mfaToken, method: 'totp', code: codeAt(secret) })
      .expect(200);
    expect(Object.keys(done.body.data).sort()).toEqual([
      'avatarUrl',
      'expiresIn',
      'memberId',
      'nickname',
      'refreshExpiresIn',
      'refreshToken',
      'token',
      'tokenType',
      'username',
    ]);
    expect(claimsOf(done.body.data.token).amr).toEqual(['pwd', 'otp', 'mfa']);
    // The session keeps it: a refreshed token carries the same amr.
    const refreshed = await m.c
      .post(`${AUTH}/refresh-token`)
      .send({ refreshToken: done.body.data.refreshToken })
      .expect(200);
    expect(claimsOf(refreshed.body.data.token).amr).toEqual(['pwd', 'otp', 'mfa']);
    // The challenge is single use.
    const again = await m.c
      .post(`${AUTH}/mfa/verify`)
      .send({ mfaToken: ch.mfaToken, method: 'totp', code: codeAt(secret) })
      .expect(401);
    expect(again.body.code).toBe(10012);
  });

  it('accepts a code once across two instances, racing; accepts the steps next to the current one and no further', async () => {
    const m = await newMember();
    const { secret } = await enrolTotp(m);
    clock.advance(STEP_MS);
    const code = codeAt(secret);
    const [c1, c2] = [await challengeFor(m), await challengeFor(m)];
    const results = await Promise.all([
      client(a.url).post(`${AUTH}/mfa/verify`).send({ mfaToken: c1.mfaToken, method: 'totp', code }),
      client(b.url).post(`${AUTH}/mfa/verify`).send({ mfaToken: c2.mfaToken, method: 'totp', code }),
    ]);
    expect(results.map((r) => r.status).sort()).toEqual([200, 401]);
    expect(results.find((r) => r.status === 401)!.body.code).toBe(10011);
    // Replayed later on the other instance, still refused.
    const c3 = await challengeFor(m);
    await client(b.url).post(`${AUTH}/mfa/verify`).send({ mfaToken: c3.mfaToken, method: 'totp', code }).expect(401);

    // ±1 step: the next step's code is accepted now (a phone a little ahead).
    await client(b.url)
      .post(`${AUTH}/mfa/verify`)
      .send({ mfaToken: c3.mfaToken, method: 'totp', code: codeAt(secret, clock.now() + STEP_MS) })
      .expect(200);
    // Two steps on, the previous step's code (a phone a little behind) is accepted.
    clock.advance(3 * STEP_MS);
    const c4 = await challengeFor(m);
    await client(a.url)
      .post(`${AUTH}/mfa/verify`)
      .send({ mfaToken: c4.mfaToken, method: 'totp', code: codeAt(secret, clock.now() - STEP_MS) })
      .expect(200);
    // Two steps away is refused either way.
    clock.advance(3 * STEP_MS);
    const c5 = await challengeFor(m);
    await client(a.url)
      .post(`${AUTH}/mfa/verify`)
      .send({ mfaToken: c5.mfaToken, method: 'totp', code: codeAt(secret, clock.now() - 2 * STEP_MS) })
      .expect(401);
    await client(a.url)
      .post(`${AUTH}/mfa/verify`)
      .send({ mfaToken: c5.mfaToken, method: 'totp', code: codeAt(secret, clock.now() + 2 * STEP_MS) })
      .expect(401);
    await client(a.url)
      .post(`${AUTH}/mfa/verify`)
      .send({ mfaToken: c5.mfaToken, method: 'totp', code: codeAt(secret) })
      .expect(200);
  });

  it('recovery codes: single use, any case and dashes, announced with the codes left; regenerated only after a step-up', async () => {
    const m = await newMember();
    const { recoveryCodes } = await enrolTotp(m);
    const ch = await challengeFor(m);
    const mailsBefore = smtp.mails.length;
    const code = recoveryCodes[3].toUpperCase().replace(/-/g, ' ');
    const done = await m.c
      .post(`${AUTH}/mfa/verify`)
      .send({ mfaToken: ch.mfaToken, method: 'recovery_code', code })
      .expect(200);
    expect(claimsOf(done.body.data.token).amr).toEqual(['pwd', 'otp', 'mfa']);
    const notice = smtp.mails.slice(mailsBefore).find((x) => x.to === m.email);
    expect(readMail(notice!.text).body).toContain(
      'A recovery code was used to sign in to your Membership account (9 left)',
    );
    const ch2 = await challengeFor(m);
    const reused = await m.c
      .post(`${AUTH}/mfa/verify`)
      .send({ mfaToken: ch2.mfaToken, method: 'recovery_code', code: recoveryCodes[3] })
      .expect(401);
    expect(reused.body).toEqual({ code: 10011, message: 'The code is wrong or was already used', data: null });
    const token = done.body.data.token as string;
    const factors = await m.c.get(`${SEC}/factors`).set(bearer(token)).expect(200);
    expect(factors.body.data.recoveryCodes.remaining).toBe(9);

    // Regenerating: the recovery-code sign-in counts as a step-up for STEP_UP_MAX_AGE_MS, then no longer.
    clock.advance(11 * 60_000);
    const refused = await m.c.post(`${SEC}/recovery-codes`).set(bearer(token)).expect(403);
    expect(refused.body).toEqual({
      code: 10010,
      message: expect.stringContaining('authenticator app'),
      data: { required: 'totp', methods: ['totp', 'passkey', 'recovery_code'] },
    });
    const stepped = await m.c
      .post(`${AUTH}/step-up`)
      .set(bearer(token))
      .send({ method: 'recovery_code', code: recoveryCodes[0] })
      .expect(200);
    const fresh = await m.c.post(`${SEC}/recovery-codes`).set(bearer(stepped.body.data.token)).expect(200);
    expect(fresh.body.data.recoveryCodes).toHaveLength(10);
    const ch3 = await challengeFor(m);
    await m.c
      .post(`${AUTH}/mfa/verify`)
      .send({ mfaToken: ch3.mfaToken, method: 'recovery_code', code: recoveryCodes[5] })
      .expect(401);
    await m.c
      .post(`${AUTH}/mfa/verify`)
      .send({ mfaToken: ch3.mfaToken, method: 'recovery_code', code: fresh.body.data.recoveryCodes[5] })
      .expect(200);
  });

  it('a challenge expires, and is void after MFA_CHALLENGE_MAX_ATTEMPTS wrong answers; a member is locked after MFA_MEMBER_MAX_FAILURES', async () => {
    const m = await newMember();
    const { secret } = await enrolTotp(m);
    clock.advance(STEP_MS);
    // Expiry: the entry's lifetime in shared state is over (PostgreSQL backend: expires_at in the past).
    const expiring = await challengeFor(m);
    await db.query(`UPDATE shared_state SET expires_at = now() - interval '1 second' WHERE key LIKE 'mfa:challenge:%'`);
    const expired = await m.c
      .post(`${AUTH}/mfa/verify`)
      .send({ mfaToken: expiring.mfaToken, method: 'totp', code: codeAt(secret) })
      .expect(401);
    expect(expired.body).toEqual({
      code: 10012,
      message: 'The sign-in challenge is unknown, expired or used up; sign in again',
      data: null,
    });

    const ch = await challengeFor(m);
    const wrong = codeAt(secret, clock.now() + 10 * STEP_MS);
    for (let i = 0; i < 5; i++) {
      const r = await m.c
        .post(`${AUTH}/mfa/verify`)
        .send({ mfaToken: ch.mfaToken, method: 'totp', code: wrong })
        .expect(401);
      expect(r.body.code).toBe(10011);
    }
    const spent = await m.c
      .post(`${AUTH}/mfa/verify`)
      .send({ mfaToken: ch.mfaToken, method: 'totp', code: codeAt(secret) })
      .expect(401);
    expect(spent.body.code).toBe(10012);

    // 5 failures so far; 5 more across new challenges and instances lock the member's second-factor checks.
    for (let i = 0; i < 4; i++) {
      const next = await challengeFor(m);
      await client(i % 2 ? a.url : b.url)
        .post(`${AUTH}/mfa/verify`)
        .send({ mfaToken: next.mfaToken, method: 'totp', code: wrong })
        .expect(401);
    }
    const last = await challengeFor(m);
    const locked = await client(b.url)
      .post(`${AUTH}/mfa/verify`)
      .send({ mfaToken: last.mfaToken, method: 'totp', code: wrong })
      .expect(423);
    expect(locked.body.code).toBe(10008);
    expect(Number(locked.headers['retry-after'])).toBeGreaterThan(0);
    // Even the right code is refused while locked.
    const still = await client(a.url)
      .post(`${AUTH}/mfa/verify`)
      .send({ mfaToken: last.mfaToken, method: 'totp', code: codeAt(secret) })
      .expect(423);
    expect(still.body.code).toBe(10008);
  });

  it('refuses malformed answers with 10000 and a passkey answer that is not one with 10011', async () => {
    const m = await newMember();
    await enrolTotp(m);
    const ch = await challengeFor(m);
    const cases: Array<[object, string]> = [
      [{ mfaToken: 'nope', method: 'totp', code: '123456' }, 'mfaToken'],
      [{ mfaToken: ch.mfaToken, method: 'sms', code: '123456' }, 'method'],
      [{ mfaToken: ch.mfaToken, method: 'totp' }, 'code'],
      [{ mfaToken: ch.mfaToken, method: 'passkey' }, 'credential'],
    ];
    for (const [body, field] of cases) {
      const r = await m.c.post(`${AUTH}/mfa/verify`).set('Accept-Language', 'zh-CN').send(body).expect(400);
      expect(r.body.code).toBe(10000);
      expect(r.body.message).toContain(field);
    }
    const bogus = await m.c
      .post(`${AUTH}/mfa/verify`)
      .send({ mfaToken: ch.mfaToken, method: 'passkey', credential: { id: 'x', response: {} } })
      .expect(401);
    expect(bogus.body.code).toBe(10011);
    await m.c
      .post(`${AUTH}/mfa/passkey-options`)
      .send({ mfaToken: `mfa_${'a'.repeat(43)}` })
      .expect(401);
  });

  it('step-up: a sensitive change needs the strongest factor within STEP_UP_MAX_AGE_MS; a new token carries the new amr', async () => {
    const m = await newMember();
    const { secret } = await enrolTotp(m);
    // The session that enrolled never showed a factor at sign-in: password change needs a step-up.
    const refused = await m.c
      .put(`${AUTH}/password`)
      .set(bearer(m.token))
      .send({ oldPassword: 'second-factor-pass', newPassword: 'another-long-pass' })
      .expect(403);
    expect(refused.body.code).toBe(10010);
    await m.c.delete(`${SEC}/totp`).set(bearer(m.token)).expect(403);
    const wrong = await m.c
      .post(`${AUTH}/step-up`)
      .set(bearer(m.token))
      .send({ method: 'totp', code: codeAt(secret, clock.now() + 9 * STEP_MS) })
      .expect(401);
    expect(wrong.body.code).toBe(10011);
    clock.advance(STEP_MS);
    const stepped = await m.c
      .post(`${AUTH}/step-up`)
      .set(bearer(m.token))
      .send({ method: 'totp', code: codeAt(secret) })
      .expect(200);
    expect(stepped.body.data).toEqual({
      token: expect.any(String),
      tokenType: 'Bearer',
      expiresIn: expect.any(Number),
      amr: ['pwd', 'otp', 'mfa'],
      stepUpExpiresIn: 600_000,
    });
    expect(claimsOf(stepped.body.data.token).amr).toEqual(['pwd', 'otp', 'mfa']);
    expect(claimsOf(stepped.body.data.token).sid).toBe(claimsOf(m.token).sid);
    const status = await m.c.get(`${SEC}/factors`).set(bearer(m.token)).expect(200);
    expect(status.body.data.stepUp).toEqual({
      required: 'totp',
      satisfiedUntil: new Date(clock.now() + 600_000).toISOString(),
    });
    // Within the window (by the app's clock) the change goes through, with either token of the session.
    clock.advance(9 * 60_000);
    await m.c
      .put(`${AUTH}/password`)
      .set(bearer(m.token))
      .send({ oldPassword: 'second-factor-pass', newPassword: 'another-long-pass' })
      .expect(200);
    // Past it, refused again.
    clock.advance(2 * 60_000);
    await m.c.delete(`${SEC}/totp`).set(bearer(m.token)).expect(403);
    clock.advance(STEP_MS);
    const again = await m.c
      .post(`${AUTH}/step-up`)
      .set(bearer(m.token))
      .send({ method: 'totp', code: codeAt(secret) })
      .expect(200);
    await m.c.delete(`${SEC}/totp`).set(bearer(again.body.data.token)).expect(200);
    // No factor left: no recovery codes, no challenge, no step-up.
    expect(
      (await db.query('SELECT count(*)::int AS n FROM member_recovery_codes WHERE member_id = $1', [m.memberId]))
        .rows[0].n,
    ).toBe(0);
    const plain = await m.c
      .post(`${AUTH}/login`)
      .send({ account: m.username, password: 'another-long-pass' })
      .expect(200);
    expect(plain.body.data.token).toEqual(expect.any(String));
    await m.c
      .post(`${AUTH}/step-up`)
      .set(bearer(plain.body.data.token))
      .send({ method: 'totp', code: '123456' })
      .expect(409);
  });

  it('phone-code sign-in of a member with a factor is challenged too (amr sms, otp, mfa)', async () => {
    const c = client(a.url);
    const phone = `139${String(Date.now()).slice(-8)}`;
    await c.post(`${AUTH}/send-code`).send({ type: 'sms', phone }).expect(200);
    const first = await c
      .post(`${AUTH}/login-by-phone`)
      .send({ phone, code: sms.lastCode(phone) })
      .expect(200);
    const token = first.body.data.token as string;
    expect(claimsOf(token).amr).toEqual(['sms']);
    const { secret } = await enrolTotp({ c, token });
    clock.advance(STEP_MS);
    await c.post(`${AUTH}/send-code`).send({ type: 'sms', phone }).expect(200);
    const ch = await c
      .post(`${AUTH}/login-by-phone`)
      .send({ phone, code: sms.lastCode(phone) })
      .expect(200);
    expect(ch.body.data).toMatchObject({ mfaRequired: true, methods: ['totp', 'recovery_code'] });
    const done = await c
      .post(`${AUTH}/mfa/verify`)
      .send({ mfaToken: ch.body.data.mfaToken, method: 'totp', code: codeAt(secret) })
      .expect(200);
    expect(claimsOf(done.body.data.token).amr).toEqual(['sms', 'otp', 'mfa']);
  });

  it('enforcement: an admin without a factor must enrol one at sign-in before getting tokens', async () => {
    const c = client(a.url);
    const ch = await c.post(`${AUTH}/login`).send({ account: 'tf_admin', password: 'admin-password-1' }).expect(200);
    expect(ch.body.data).toEqual({
      mfaRequired: true,
      mfaToken: expect.any(String),
      methods: ['totp', 'passkey'],
      enrolmentRequired: true,
      expiresIn: 300_000,
    });
    const token = ch.body.data.mfaToken as string;
    // The enrolment token answers nothing else.
    const notAnswer = await c
      .post(`${AUTH}/mfa/verify`)
      .send({ mfaToken: token, method: 'totp', code: '123456' })
      .expect(401);
    expect(notAnswer.body).toEqual({
      code: 10012,
      message: 'This sign-in must first enrol a second factor',
      data: null,
    });
    const begun = await c.post(`${AUTH}/mfa/enrol/totp`).send({ mfaToken: token }).expect(200);
    const secret = begun.body.data.secret as string;
    await c
      .post(`${AUTH}/mfa/enrol/totp/confirm`)
      .send({ mfaToken: token, code: codeAt(secret, clock.now() + 7 * STEP_MS) })
      .expect(401);
    const done = await c
      .post(`${AUTH}/mfa/enrol/totp/confirm`)
      .send({ mfaToken: token, code: codeAt(secret) })
      .expect(200);
    expect(done.body.data).toMatchObject({
      token: expect.any(String),
      refreshToken: expect.any(String),
      tokenType: 'Bearer',
    });
    expect(done.body.data.recoveryCodes).toHaveLength(10);
    expect(claimsOf(done.body.data.token).amr).toEqual(['pwd', 'otp', 'mfa']);
    const factors = await c.get(`${SEC}/factors`).set(bearer(done.body.data.token)).expect(200);
    expect(factors.body.data).toMatchObject({
      totp: { enabled: true },
      mfaRequiredByRole: true,
      stepUp: { required: 'totp', satisfiedUntil: expect.any(String) },
    });
    // The enrolment token is used up; the next sign-in is an ordinary challenge.
    await c.post(`${AUTH}/mfa/enrol/totp`).send({ mfaToken: token }).expect(401);
    const next = await c.post(`${AUTH}/login`).send({ account: 'tf_admin', password: 'admin-password-1' }).expect(200);
    expect(next.body.data).toMatchObject({
      mfaRequired: true,
      enrolmentRequired: false,
      methods: ['totp', 'recovery_code'],
    });
    // An ordinary challenge does not enrol.
    const wrongKind = await c.post(`${AUTH}/mfa/enrol/totp`).send({ mfaToken: next.body.data.mfaToken }).expect(401);
    expect(wrongKind.body.code).toBe(10012);
  });

  it("code mails speak the reader's language and name the site as its settings do (a zh-CN browser on a renamed site)", async () => {
    const m = await newMember();
    await db.query(`UPDATE site_settings SET value = '创客社区' WHERE key = 'site.name'`);
    try {
      await m.c
        .post(`${AUTH}/send-code`)
        .set('Accept-Language', 'zh-CN,zh;q=0.9,en;q=0.8')
        .send({ type: 'email', email: m.email })
        .expect(200);
      const zh = readMail(smtp.mails.filter((x) => x.to === m.email).at(-1)!.text);
      expect(zh.subject).toBe('创客社区验证码');
      expect(zh.body).toMatch(/^您的创客社区验证码为 \d{6}，5 分钟内有效。/);
      // The code in it resets the password.
      await m.c
        .post(`${AUTH}/reset-password`)
        .send({ type: 'email', account: m.email, code: smtp.lastCode(m.email), newPassword: 'reset-by-zh-mail' })
        .expect(200);
      await m.c
        .post(`${AUTH}/send-code`)
        .set('Accept-Language', 'en-GB')
        .send({ type: 'email', email: m.email })
        .expect(200);
      const en = readMail(smtp.mails.filter((x) => x.to === m.email).at(-1)!.text);
      expect(en.subject).toBe('创客社区 verification code');
      expect(en.body).toMatch(/^Your 创客社区 verification code is \d{6}\. It expires in 5 minutes\./);
    } finally {
      await db.query(`UPDATE site_settings SET value = 'Membership' WHERE key = 'site.name'`);
    }
  });

  it('the admin CLI explains the enforced second factor when MFA_REQUIRED_ROLES names admin, and not otherwise', async () => {
    const env = {
      ...process.env,
      NODE_ENV: 'test',
      DATABASE_URL: a.dbUrl,
      DATA_DIR: a.dataDir,
      JWT_SECRET: 'test-secret-test-secret-test-secret-0123456789',
      ADMIN_PASSWORD: 'cli-admin-password',
    };
    const enforced = await createAdminCommand(
      ['tf_cli_admin'],
      { ...env, MFA_REQUIRED_ROLES: 'admin' },
      Readable.from([]),
    );
    expect(enforced).toMatch(
      /^admin tf_cli_admin created \(member id \d+\)\nnote: admins must use a second factor \(MFA_REQUIRED_ROLES\): the first sign-in answers \{mfaRequired, enrolmentRequired: true, mfaToken\}/,
    );
    const plain = await createAdminCommand(['tf_cli_admin'], { ...env, MFA_REQUIRED_ROLES: 'none' }, Readable.from([]));
    expect(plain).toBe(
      `admin tf_cli_admin (id ${/member id (\d+)/.exec(enforced)![1]}) already exists; nothing changed`,
    );
  });

  it('every endpoint of the factors needs a token', async () => {
    const c = client(a.url);
    for (const [method, path] of [
      ['get', `${SEC}/factors`],
      ['post', `${SEC}/totp`],
      ['delete', `${SEC}/totp`],
      ['post', `${SEC}/recovery-codes`],
      ['get', `${SEC}/passkeys`],
      ['post', `${AUTH}/step-up`],
    ] as const) {
      const r = await c[method](path).expect(401);
      expect(r.body.code).toBe(401);
    }
    await request(a.url).patch(`${SEC}/passkeys/6f1c2d4e-8a9b-4c3d-9e1f-2a3b4c5d6e7f`).send({ name: 'x' }).expect(401);
  });
});
