import * as bcrypt from 'bcryptjs';
import { Client } from 'pg';
import { RunningApp, startMembership } from '../support/apps';
import { FakeClock } from '../support/clock';
import { sqlClient } from '../support/database';
import { bearer, client } from './fakes';

const REGISTER = '/api/v1/app/auth/register';
const LOGIN = '/api/v1/app/auth/login';
// Long enough that the failure counters (kept in shared state by real time) cannot roll over mid-test;
// locks end by the app's clock, which the tests move.
const LOCK_MS = 3_600_000;

describe('membership: register and password login', () => {
  let app: RunningApp;
  let db: Client;
  const clock = new FakeClock();

  beforeAll(async () => {
    app = await startMembership(
      {
        LOGIN_MAX_FAILURES: '3',
        LOGIN_ACCOUNT_MAX_FAILURES: '6',
        LOGIN_IP_MAX_FAILURES: '8',
        LOGIN_LOCK_MS: String(LOCK_MS),
      },
      { clock },
    );
    db = await sqlClient(app.dbUrl);
  });
  afterAll(async () => {
    await db?.end();
    await app?.close();
  });

  describe('register', () => {
    it('creates a member without opening a session and stores only an argon2id hash', async () => {
      const c = client(app.url);
      const res = await c
        .post(REGISTER)
        .send({
          username: 'reg_user1',
          email: 'Reg1@Example.com',
          phone: '13800000001',
          nickname: 'Reg',
          password: 'password-one',
        })
        .expect(200);
      // The website goes to the login page after registering and reads nothing here: no tokens, no session left behind.
      expect(res.body).toEqual({
        code: 200,
        message: 'success',
        data: {
          memberId: expect.stringMatching(/^\d+$/),
          username: 'reg_user1',
          nickname: 'Reg',
          avatarUrl: null,
          emailVerified: false,
          phoneVerified: false,
        },
      });
      expect(
        (
          await db.query('SELECT count(*)::int AS n FROM member_sessions WHERE member_id = $1', [
            res.body.data.memberId,
          ])
        ).rows[0].n,
      ).toBe(0);
      const row = (await db.query('SELECT email, password_hash FROM members WHERE username = $1', ['reg_user1']))
        .rows[0];
      expect(row.email).toBe('reg1@example.com');
      expect(row.password_hash).toMatch(/^\$argon2id\$v=19\$m=19456,p=1,t=2\$/);
      expect(JSON.stringify(res.body)).not.toContain('argon2');
    });

    it('registers with an email only and generates a username', async () => {
      const res = await client(app.url)
        .post(REGISTER)
        .send({ email: 'only-mail@example.com', password: 'password-two' })
        .expect(200);
      expect(res.body.data.username).toMatch(/^m_[A-Za-z0-9]{12}$/);
    });

    it.each([
      [{ password: 'password-x' }, 'username'],
      [{ username: 'ab', password: 'password-x' }, 'username'],
      [{ username: 'bad name!', password: 'password-x' }, 'username'],
      [{ username: '13912345678', password: 'password-x' }, 'username'],
      [{ username: 'good_name', password: 'short' }, 'password'],
      [{ username: 'good_name', password: 'x'.repeat(129) }, 'password'],
      [{ username: 'good_name', password: 'password-x', phone: '12345' }, 'phone'],
      [{ username: 'good_name', password: 'password-x', email: 'not-mail' }, 'email'],
      [{ username: 'good_name', password: 'password-x', role: 'admin' }, 'role'],
    ])('refuses %j with 10000 naming %s', async (body, field) => {
      const res = await client(app.url).post(REGISTER).send(body).expect(400);
      expect(res.body.code).toBe(10000);
      expect(res.body.message).toContain(field);
    });

    it.each([
      [{ username: 'REG_USER1', password: 'password-x' }, 'username'],
      [{ username: 'other_1', email: 'reg1@EXAMPLE.com', password: 'password-x' }, 'email'],
      [{ username: 'other_2', phone: '13800000001', password: 'password-x' }, 'phone'],
    ])('refuses a taken %j with 10005 / 409', async (body, field) => {
      const res = await client(app.url).post(REGISTER).send(body).expect(409);
      expect(res.body).toEqual({ code: 10005, message: `${field} is already taken`, data: { field } });
    });

    it('of two concurrent sign-ups with one username exactly one wins', async () => {
      const results = await Promise.all(
        [1, 2, 3, 4].map(() =>
          client(app.url).post(REGISTER).send({ username: 'race_user', password: 'password-race' }),
        ),
      );
      expect(results.map((r) => r.status).sort()).toEqual([200, 409, 409, 409]);
    });

    it('a malformed JSON body is a 400 envelope', async () => {
      const res = await client(app.url)
        .post(REGISTER)
        .set('Content-Type', 'application/json')
        .send('{"username":')
        .expect(400);
      expect(res.body.code).toBe(400);
    });
  });

  describe('login', () => {
    beforeAll(async () => {
      await client(app.url)
        .post(REGISTER)
        .send({ username: 'login_user', email: 'login@example.com', phone: '13900000002', password: 'login-password' })
        .expect(200);
    });

    it.each([['login_user'], ['LOGIN_USER'], ['login@example.com'], ['13900000002']])(
      'accepts account %s',
      async (account) => {
        const res = await client(app.url).post(LOGIN).send({ account, password: 'login-password' }).expect(200);
        expect(res.body.data.username).toBe('login_user');
        const profile = await client(app.url)
          .get('/api/v1/app/auth/profile')
          .set(bearer(res.body.data.token))
          .expect(200);
        expect(profile.body.data.lastLoginTime).not.toBeNull();
      },
    );

    it('gives the same 10002 answer for a wrong password and an unknown account', async () => {
      const wrong = await client(app.url)
        .post(LOGIN)
        .send({ account: 'login_user', password: 'nope-nope' })
        .expect(401);
      const unknown = await client(app.url)
        .post(LOGIN)
        .send({ account: 'nobody_here', password: 'nope-nope' })
        .expect(401);
      expect(wrong.body).toEqual({ code: 10002, message: 'Wrong account or password', data: null });
      expect(unknown.body).toEqual(wrong.body);
    });

    it('spends the same work on unknown accounts (a dummy hash) as on wrong passwords', async () => {
      // Counted, not timed (a ratio of response times depended on the machine's load): each refused
      // login runs exactly one argon2id verification, with a member's parameters for an unknown account too.
      const member = (await db.query(`SELECT password_hash FROM members WHERE username = 'login_user'`)).rows[0]
        .password_hash as string;
      // The module object itself: an `import * as` namespace has read-only bindings to it.
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      const verify = jest.spyOn(require('argon2') as typeof import('argon2'), 'verify');
      const params = (hash: string) => hash.replace(/\$[^$]*\$[^$]*$/, '');
      try {
        for (const account of ['login_user', 'ghost_timing']) {
          verify.mockClear();
          await client(app.url).post(LOGIN).send({ account, password: 'timing-wrong' }).expect(401);
          expect({ account, verifications: verify.mock.calls.length }).toEqual({ account, verifications: 1 });
          expect({ account, params: params(verify.mock.calls[0][0]) }).toEqual({ account, params: params(member) });
        }
      } finally {
        verify.mockRestore();
      }
    });

    it('verifies a bcrypt hash imported from the old system and rehashes it to argon2id', async () => {
      const legacy = bcrypt.hashSync('old-java-password', 10).replace(/^\$2[ab]\$/, '$2a$');
      await db.query(`INSERT INTO members (username, password_hash) VALUES ('legacy_user', $1)`, [legacy]);
      await client(app.url).post(LOGIN).send({ account: 'legacy_user', password: 'wrong-password' }).expect(401);
      expect(
        (await db.query(`SELECT password_hash FROM members WHERE username = 'legacy_user'`)).rows[0].password_hash,
      ).toBe(legacy);
      await client(app.url).post(LOGIN).send({ account: 'legacy_user', password: 'old-java-password' }).expect(200);
      const after = (await db.query(`SELECT password_hash FROM members WHERE username = 'legacy_user'`)).rows[0]
        .password_hash;
      expect(after).toMatch(/^\$argon2id\$/);
      await client(app.url).post(LOGIN).send({ account: 'legacy_user', password: 'old-java-password' }).expect(200);
    });

    it('refuses a disabled member with 10008 only after a correct password', async () => {
      await client(app.url).post(REGISTER).send({ username: 'disabled_1', password: 'disabled-pass' }).expect(200);
      await db.query(`UPDATE members SET status = 'disabled' WHERE username = 'disabled_1'`);
      await client(app.url).post(LOGIN).send({ account: 'disabled_1', password: 'wrong-pass' }).expect(401);
      const res = await client(app.url)
        .post(LOGIN)
        .send({ account: 'disabled_1', password: 'disabled-pass' })
        .expect(423);
      expect(res.body.code).toBe(10008);
    });

    it('validates the body (10000) and refuses unknown fields', async () => {
      const res = await client(app.url).post(LOGIN).send({ account: '', password: 'x', extra: 1 }).expect(400);
      expect(res.body.code).toBe(10000);
      expect(res.body.message).toMatch(/account/);
      expect(res.body.message).toMatch(/extra/);
    });
  });

  describe('lockout', () => {
    beforeAll(async () => {
      await client(app.url).post(REGISTER).send({ username: 'lock_user', password: 'lock-password' }).expect(200);
    });

    it('locks account+IP after LOGIN_MAX_FAILURES, even for the right password, and unlocks after LOGIN_LOCK_MS', async () => {
      const attacker = client(app.url);
      for (let i = 0; i < 3; i++)
        await attacker
          .post(LOGIN)
          .send({ account: 'lock_user', password: `guess-${i}-x` })
          .expect(401);
      const locked = await attacker.post(LOGIN).send({ account: 'lock_user', password: 'lock-password' }).expect(423);
      expect(locked.body.code).toBe(10008);
      expect(Number(locked.headers['retry-after'])).toBe(LOCK_MS / 1000);
      // The member on another network is not locked out by the stranger.
      await client(app.url).post(LOGIN).send({ account: 'lock_user', password: 'lock-password' }).expect(200);
      // Still locked a second before LOGIN_LOCK_MS is up, with Retry-After counting down; over at LOGIN_LOCK_MS.
      clock.advance(LOCK_MS - 1000);
      expect(
        Number(
          (await attacker.post(LOGIN).send({ account: 'lock_user', password: 'lock-password' }).expect(423)).headers[
            'retry-after'
          ],
        ),
      ).toBe(1);
      clock.advance(1000);
      await attacker.post(LOGIN).send({ account: 'lock_user', password: 'lock-password' }).expect(200);
    });

    it('locks the account for every IP after LOGIN_ACCOUNT_MAX_FAILURES from many IPs', async () => {
      await client(app.url).post(REGISTER).send({ username: 'botnet_target', password: 'target-password' }).expect(200);
      for (let i = 0; i < 6; i++)
        await client(app.url)
          .post(LOGIN)
          .send({ account: 'botnet_target', password: `guess-${i}-y` })
          .expect(401);
      const res = await client(app.url)
        .post(LOGIN)
        .send({ account: 'botnet_target', password: 'target-password' })
        .expect(423);
      expect(res.body.code).toBe(10008);
      clock.advance(LOCK_MS - 1000);
      await client(app.url).post(LOGIN).send({ account: 'botnet_target', password: 'target-password' }).expect(423);
      clock.advance(1000);
      await client(app.url).post(LOGIN).send({ account: 'botnet_target', password: 'target-password' }).expect(200);
    });

    it('locks an IP that sprays passwords across accounts', async () => {
      const sprayer = client(app.url);
      for (let i = 0; i < 8; i++) {
        const res = await sprayer.post(LOGIN).send({ account: `spray_${i}`, password: 'Summer2026!' });
        expect(res.status).toBe(401);
      }
      const res = await sprayer.post(LOGIN).send({ account: 'login_user', password: 'login-password' }).expect(423);
      expect(res.body.code).toBe(10008);
      await client(app.url).post(LOGIN).send({ account: 'login_user', password: 'login-password' }).expect(200);
    });

    it('answers lock for unknown accounts the same way (no enumeration through the lock)', async () => {
      const c = client(app.url);
      for (let i = 0; i < 3; i++)
        await c
          .post(LOGIN)
          .send({ account: 'ghost_account', password: `guess-${i}-z` })
          .expect(401);
      expect(
        (await c.post(LOGIN).send({ account: 'ghost_account', password: 'whatever1' }).expect(423)).body.code,
      ).toBe(10008);
    });
  });

  describe('rate limits', () => {
    it('answers 429 with Retry-After past the per-route limit (register: 10 per minute per IP)', async () => {
      const c = client(app.url);
      for (let i = 0; i < 10; i++) await c.post(REGISTER).send({}).expect(400);
      const res = await c.post(REGISTER).send({}).expect(429);
      expect(res.body.code).toBe(429);
      expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
    });
  });
});
