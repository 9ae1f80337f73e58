/**
 * An unproven phone or email is a claim that never logs
 * anyone in and never blocks its proven owner; a first password needs a fresh code; a stranger's wrong
 * passwords cannot keep the member out; register opens no session; PASSWORD_MIN_LENGTH.
 */
import { Client } from 'pg';
import { RunningApp, startMembership } from '../support/apps';
import { sqlClient } from '../support/database';
import { bearer, client, FakeAliyun, FakeSmtp, startFakeAliyun, startFakeSmtp } from './fakes';

const REGISTER = '/api/v1/app/auth/register';
const LOGIN = '/api/v1/app/auth/login';
const SEND = '/api/v1/app/auth/send-code';
const PHONE_LOGIN = '/api/v1/app/auth/login-by-phone';
const RESET = '/api/v1/app/auth/reset-password';
const PROFILE = '/api/v1/app/auth/profile';
const PASSWORD = '/api/v1/app/auth/password';

describe('membership: proof of phone and email, first password, lockout a stranger cannot keep', () => {
  let app: RunningApp;
  let sms: FakeAliyun;
  let smtp: FakeSmtp;
  let db: Client;

  beforeAll(async () => {
    [sms, smtp] = await Promise.all([startFakeAliyun(), startFakeSmtp()]);
    app = await startMembership({
      ...sms.env,
      ...smtp.env,
      CODE_RESEND_INTERVAL_MS: '0',
      // Long windows: nothing here may expire or roll over while the test runs.
      LOGIN_MAX_FAILURES: '3',
      LOGIN_ACCOUNT_MAX_FAILURES: '6',
      LOGIN_IP_MAX_FAILURES: '50',
      LOGIN_LOCK_MS: '3600000',
    });
    db = await sqlClient(app.dbUrl);
  });
  afterAll(async () => {
    await db?.end();
    await app?.close();
    await Promise.all([sms?.close(), smtp?.close()]);
  });

  const row = async (id: string) =>
    (await db.query(`SELECT email, phone, email_verified_time, phone_verified_time FROM members WHERE id = $1`, [id]))
      .rows[0];
  const smsCode = async (phone: string) => {
    await client(app.url).post(SEND).send({ type: 'sms', phone }).expect(200);
    return sms.lastCode(phone);
  };
  const mailCode = async (email: string) => {
    await client(app.url).post(SEND).send({ type: 'email', email }).expect(200);
    return smtp.lastCode(email);
  };

  describe('phone', () => {
    it("the victim's first SMS login gets the victim's own account, and the attacker's account loses the phone", async () => {
      const phone = '13711110001';
      const attacker = client(app.url);
      const claim = await attacker
        .post(REGISTER)
        .send({ username: 'attacker_p1', phone, password: 'attacker-password' })
        .expect(200);
      expect(claim.body.data).toMatchObject({ phoneVerified: false });
      const attackerId = claim.body.data.memberId;

      const victim = client(app.url);
      const login = await victim
        .post(PHONE_LOGIN)
        .send({ phone, code: await smsCode(phone) })
        .expect(200);
      expect(login.body.data.memberId).not.toBe(attackerId);
      expect(login.body.data.username).not.toBe('attacker_p1');
      const profile = await victim.get(PROFILE).set(bearer(login.body.data.token)).expect(200);
      expect(profile.body.data.phone).toBe(phone);
      expect((await row(login.body.data.memberId)).phone_verified_time).not.toBeNull();

      // The claim is gone from the attacker's account; the attacker's password opens nothing by this phone.
      expect((await row(attackerId)).phone).toBeNull();
      await attacker.post(LOGIN).send({ account: phone, password: 'attacker-password' }).expect(401);
      // A second SMS login lands in the same (the victim's) account.
      const again = await client(app.url)
        .post(PHONE_LOGIN)
        .send({ phone, code: await smsCode(phone) })
        .expect(200);
      expect(again.body.data.memberId).toBe(login.body.data.memberId);
      // The verified phone now blocks a new unproven claim.
      expect(
        (
          await attacker
            .post(REGISTER)
            .send({ username: 'attacker_p1b', phone, password: 'attacker-password' })
            .expect(409)
        ).body.code,
      ).toBe(10005);
    });

    it('registering with phoneCode proves the phone and takes it back from an unproven claim', async () => {
      const phone = '13711110002';
      const attackerId = (
        await client(app.url)
          .post(REGISTER)
          .send({ username: 'attacker_p2', phone, password: 'attacker-password' })
          .expect(200)
      ).body.data.memberId;
      // Without a code the owner is refused like any other claimant (one holder per address)...
      await client(app.url)
        .post(REGISTER)
        .send({ username: 'owner_p2', phone, password: 'owner-password' })
        .expect(409);
      // ...with the code the owner wins.
      const owner = await client(app.url)
        .post(REGISTER)
        .send({ username: 'owner_p2', phone, phoneCode: await smsCode(phone), password: 'owner-password' })
        .expect(200);
      expect(owner.body.data).toMatchObject({ username: 'owner_p2', phoneVerified: true });
      expect((await row(attackerId)).phone).toBeNull();
      await client(app.url).post(LOGIN).send({ account: phone, password: 'owner-password' }).expect(200);
      // A wrong code proves nothing.
      const res = await client(app.url)
        .post(REGISTER)
        .send({ username: 'owner_p2b', phone: '13711110003', phoneCode: '000000', password: 'owner-password' })
        .expect(400);
      expect(res.body.code).toBe(10003);
    });
  });

  describe('email', () => {
    it('an unproven email claim does not block its owner, who proves it at registration', async () => {
      const email = 'victim.one@example.com';
      const attackerId = (
        await client(app.url)
          .post(REGISTER)
          .send({ username: 'attacker_e1', email, password: 'attacker-password' })
          .expect(200)
      ).body.data.memberId;
      const owner = await client(app.url)
        .post(REGISTER)
        .send({ username: 'owner_e1', email, emailCode: await mailCode(email), password: 'owner-password' })
        .expect(200);
      expect(owner.body.data).toMatchObject({ username: 'owner_e1', emailVerified: true });
      expect((await row(attackerId)).email).toBeNull();
      const login = await client(app.url).post(LOGIN).send({ account: email, password: 'owner-password' }).expect(200);
      expect(login.body.data.username).toBe('owner_e1');
      await client(app.url).post(LOGIN).send({ account: email, password: 'attacker-password' }).expect(401);
      // emailCode without email is a validation error, not a silent proof of nothing.
      expect(
        (
          await client(app.url)
            .post(REGISTER)
            .send({ username: 'owner_e1b', emailCode: '123456', password: 'owner-password' })
            .expect(400)
        ).body.code,
      ).toBe(10000);
    });

    it('the website sign-up (no code) and login with the email as account still work', async () => {
      const c = client(app.url);
      await c
        .post(REGISTER)
        .send({ username: 'website_user', email: 'site.user@example.com', password: 'site-password' })
        .expect(200);
      const login = await c
        .post(LOGIN)
        .send({ account: 'site.user@example.com', password: 'site-password' })
        .expect(200);
      expect(login.body.data.username).toBe('website_user');
    });

    it('reset by code to an unproven claim on an account with another way in: the owner takes the address back, never the account', async () => {
      const email = 'victim.two@example.com';
      const attackerPhone = '13711110004';
      // The attacker claims the victim's email on an account the attacker can also enter by their own (proven) phone.
      const attacker = client(app.url);
      const attackerId = (
        await attacker
          .post(REGISTER)
          .send({
            username: 'attacker_e2',
            email,
            phone: attackerPhone,
            phoneCode: await smsCode(attackerPhone),
            password: 'attacker-password',
          })
          .expect(200)
      ).body.data.memberId;
      const attackerLogin = await attacker
        .post(LOGIN)
        .send({ account: 'attacker_e2', password: 'attacker-password' })
        .expect(200);
      // The attacker cannot reset: the code goes to the victim's mailbox.
      await client(app.url).post(SEND).send({ type: 'email', email }).expect(200);
      expect(
        (
          await attacker
            .post(RESET)
            .send({ type: 'email', email, code: '000000', newPassword: 'attacker-new-pass' })
            .expect(400)
        ).body.code,
      ).toBe(10003);

      // The owner's reset does not touch the attacker's account: 404, the claim is removed.
      const owner = client(app.url);
      await owner
        .post(RESET)
        .send({ type: 'email', email, code: await mailCode(email), newPassword: 'owner-new-password' })
        .expect(404);
      expect((await row(attackerId)).email).toBeNull();
      await owner.post(LOGIN).send({ account: email, password: 'owner-new-password' }).expect(401);
      await attacker.post(LOGIN).send({ account: 'attacker_e2', password: 'attacker-password' }).expect(200);
      await attacker.get(PROFILE).set(bearer(attackerLogin.body.data.token)).expect(200);
      // The owner can now sign up with the website form.
      await owner.post(REGISTER).send({ username: 'owner_e2', email, password: 'owner-password' }).expect(200);
    });

    it('reset by code to an unproven claim on a password-only account: the owner gets it and nobody else keeps a way in', async () => {
      const email = 'victim.three@example.com';
      const attacker = client(app.url);
      const id = (
        await attacker
          .post(REGISTER)
          .send({ username: 'attacker_e3', email, password: 'attacker-password' })
          .expect(200)
      ).body.data.memberId;
      const session = await attacker
        .post(LOGIN)
        .send({ account: 'attacker_e3', password: 'attacker-password' })
        .expect(200);

      const owner = client(app.url);
      const reset = await owner
        .post(RESET)
        .send({ type: 'email', email, code: await mailCode(email), newPassword: 'owner-new-password' })
        .expect(200);
      expect(reset.body.data).toEqual({ revokedSessions: 1 });
      expect((await row(id)).email_verified_time).not.toBeNull();
      await attacker.get(PROFILE).set(bearer(session.body.data.token)).expect(401);
      await attacker.post(LOGIN).send({ account: 'attacker_e3', password: 'attacker-password' }).expect(401);
      await owner.post(LOGIN).send({ account: email, password: 'owner-new-password' }).expect(200);
    });
  });

  describe('first password (L1)', () => {
    it('a member without a password needs a fresh code to their verified phone to set one; a token alone is refused', async () => {
      const phone = '13711110005';
      const c = client(app.url);
      const login = await c
        .post(PHONE_LOGIN)
        .send({ phone, code: await smsCode(phone) })
        .expect(200);
      const token = login.body.data.token;
      const bare = await c.put(PASSWORD).set(bearer(token)).send({ newPassword: 'stolen-token-pass' }).expect(400);
      expect(bare.body.code).toBe(10000);
      expect(bare.body.message).toContain('code');
      await c.put(PASSWORD).set(bearer(token)).send({ newPassword: 'stolen-token-pass', code: '000000' }).expect(400);
      await c.post(LOGIN).send({ account: phone, password: 'stolen-token-pass' }).expect(401);

      await c
        .put(PASSWORD)
        .set(bearer(token))
        .send({ newPassword: 'owner-first-pass', type: 'sms', code: await smsCode(phone) })
        .expect(200);
      await c.post(LOGIN).send({ account: phone, password: 'owner-first-pass' }).expect(200);
    });

    it('a member without a password and without a verified phone or email cannot set one with a token', async () => {
      const phone = '13711110006';
      const c = client(app.url);
      const login = await c
        .post(PHONE_LOGIN)
        .send({ phone, code: await smsCode(phone) })
        .expect(200);
      await db.query(`UPDATE members SET phone = NULL, phone_verified_time = NULL WHERE id = $1`, [
        login.body.data.memberId,
      ]);
      const res = await c
        .put(PASSWORD)
        .set(bearer(login.body.data.token))
        .send({ newPassword: 'stolen-token-pass', code: '123456' })
        .expect(409);
      expect(res.body.code).toBe(409);
    });
  });

  describe('lockout (L5)', () => {
    it("a stranger's wrong passwords lock strangers out, not the member's known network nor code login", async () => {
      const phone = '13711110007';
      const home = client(app.url, '192.0.2.10');
      await home
        .post(REGISTER)
        .send({ username: 'lock_owner', phone, phoneCode: await smsCode(phone), password: 'owner-password' })
        .expect(200);
      await home.post(LOGIN).send({ account: 'lock_owner', password: 'owner-password' }).expect(200);

      // A botnet: one wrong password from each of 6 addresses (LOGIN_ACCOUNT_MAX_FAILURES) locks the account for strangers.
      for (let i = 0; i < 6; i++)
        await client(app.url, `192.0.2.${100 + i}`)
          .post(LOGIN)
          .send({ account: 'lock_owner', password: `guess-${i}-x` })
          .expect(401);
      const stranger = await client(app.url, '192.0.2.200')
        .post(LOGIN)
        .send({ account: 'lock_owner', password: 'owner-password' })
        .expect(423);
      expect(stranger.body.code).toBe(10008);
      expect(stranger.body.message).toMatch(/code/);
      expect(Number(stranger.headers['retry-after'])).toBeGreaterThan(0);

      // The member's usual network still gets in with the right password.
      await home.post(LOGIN).send({ account: 'lock_owner', password: 'owner-password' }).expect(200);
      // From a new network the member logs in with an SMS code, after which that network is known too.
      const travel = client(app.url, '192.0.2.201');
      await travel
        .post(PHONE_LOGIN)
        .send({ phone, code: await smsCode(phone) })
        .expect(200);
      await travel.post(LOGIN).send({ account: 'lock_owner', password: 'owner-password' }).expect(200);
      // The per-account-and-address lock still holds for a known address.
      for (let i = 0; i < 3; i++)
        await home
          .post(LOGIN)
          .send({ account: 'lock_owner', password: `wrong-${i}-x` })
          .expect(401);
      await home.post(LOGIN).send({ account: 'lock_owner', password: 'owner-password' }).expect(423);
    });
  });

  describe('register and PASSWORD_MIN_LENGTH', () => {
    it('register opens no session (the website logs in next)', async () => {
      const res = await client(app.url)
        .post(REGISTER)
        .send({ username: 'no_session', email: 'no.session@example.com', password: 'no-session-pass' })
        .expect(200);
      expect(res.body.data.token).toBeUndefined();
      expect(res.body.data.refreshToken).toBeUndefined();
      expect(
        (
          await db.query(`SELECT count(*)::int AS n FROM member_sessions WHERE member_id = $1`, [
            res.body.data.memberId,
          ])
        ).rows[0].n,
      ).toBe(0);
    });

    it('refuses passwords shorter than 8 by default (register, change)', async () => {
      const short = await client(app.url)
        .post(REGISTER)
        .send({ username: 'short_pw', password: 'seven77' })
        .expect(400);
      expect(short.body.code).toBe(10000);
      expect(short.body.message).toContain('password must be 8 to 128 characters');
      await client(app.url).post(REGISTER).send({ username: 'short_pw', password: 'eight888' }).expect(200);
      const login = await client(app.url).post(LOGIN).send({ account: 'short_pw', password: 'eight888' }).expect(200);
      const change = await client(app.url)
        .put(PASSWORD)
        .set(bearer(login.body.data.token))
        .send({ oldPassword: 'eight888', newPassword: 'seven77' })
        .expect(400);
      expect(change.body.code).toBe(10000);
    });

    it("PASSWORD_MIN_LENGTH=6 accepts the website form's 6-character minimum", async () => {
      const six = await startMembership({ PASSWORD_MIN_LENGTH: '6' });
      try {
        await client(six.url).post(REGISTER).send({ username: 'six_chars', password: 'six666' }).expect(200);
        await client(six.url).post(LOGIN).send({ account: 'six_chars', password: 'six666' }).expect(200);
        const five = await client(six.url)
          .post(REGISTER)
          .send({ username: 'five_chars', password: 'five5' })
          .expect(400);
        expect(five.body.message).toContain('password must be 6 to 128 characters');
      } finally {
        await six.close();
      }
    });
  });
});
