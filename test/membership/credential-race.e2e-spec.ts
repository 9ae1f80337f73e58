/**
 * A race: a reset by code (and a password change) replaces the password, then ends
 * every session. A password login that verified the OLD password before the replacement, and opens its
 * session (or re-stores the hash, or sets a new password) after the sessions were ended, must not keep
 * the account: it is refused as bad credentials. The interleaving is forced with a hook right after the
 * password check (no timing): the owner's reset runs to completion there, then the login goes on.
 */
import * as bcrypt from 'bcryptjs';
import { Client } from 'pg';
import { EntityManager } from 'typeorm';
import { MembersService } from '../../apps/membership/src/members/members.service';
import { PasswordCheck, PasswordHasher } from '../../apps/membership/src/security/password-hasher';
import { SessionsService } from '../../apps/membership/src/sessions/sessions.service';
import { RunningApp, startMembership } from '../support/apps';
import { sqlClient } from '../support/database';
import { bearer, client, FakeSmtp, startFakeSmtp } from './fakes';

const REGISTER = '/api/v1/app/auth/register';
const LOGIN = '/api/v1/app/auth/login';
const SEND = '/api/v1/app/auth/send-code';
const RESET = '/api/v1/app/auth/reset-password';
const PROFILE = '/api/v1/app/auth/profile';
const PASSWORD = '/api/v1/app/auth/password';

describe('membership: a login that verified the old password does not survive a reset', () => {
  let app: RunningApp;
  let smtp: FakeSmtp;
  let db: Client;

  beforeAll(async () => {
    smtp = await startFakeSmtp();
    app = await startMembership({ ...smtp.env, CODE_RESEND_INTERVAL_MS: '0', LOGIN_LOCK_MS: '3600000' });
    db = await sqlClient(app.dbUrl);
  });
  afterAll(async () => {
    jest.restoreAllMocks();
    await db?.end();
    await app?.close();
    await smtp?.close();
  });
  afterEach(() => jest.restoreAllMocks());

  const mailCode = async (email: string) => {
    await client(app.url).post(SEND).send({ type: 'email', email }).expect(200);
    return smtp.lastCode(email);
  };
  const liveSessions = async (memberId: string) =>
    Number(
      (
        await db.query(`SELECT count(*) AS n FROM member_sessions WHERE member_id = $1 AND revoked_time IS NULL`, [
          memberId,
        ])
      ).rows[0].n,
    );

  /** Runs `between` once, right after the first successful password check, before the caller goes on. */
  const afterNextPasswordCheck = (between: () => Promise<void>) => {
    const hasher = app.app.get(PasswordHasher);
    const original = hasher.verify.bind(hasher);
    let fired = false;
    const ran = { done: false };
    jest.spyOn(hasher, 'verify').mockImplementation(async (stored, password): Promise<PasswordCheck> => {
      const check = await original(stored, password);
      if (check.ok && !fired) {
        fired = true;
        await between();
        ran.done = true;
      }
      return check;
    });
    return ran;
  };

  it('a login whose password check came before the reset opens no session', async () => {
    const email = 'race.one@example.com';
    const attacker = client(app.url);
    const id = (
      await attacker
        .post(REGISTER)
        .send({ username: 'race_attacker1', email, password: 'attacker-password' })
        .expect(200)
    ).body.data.memberId;
    const code = await mailCode(email);
    const owner = client(app.url);
    const ran = afterNextPasswordCheck(async () => {
      await owner.post(RESET).send({ type: 'email', email, code, newPassword: 'owner-new-password' }).expect(200);
    });

    const login = await attacker.post(LOGIN).send({ account: 'race_attacker1', password: 'attacker-password' });
    expect(ran.done).toBe(true);
    if (login.status === 200) await attacker.get(PROFILE).set(bearer(login.body.data.token)).expect(401);
    expect(login.status).toBe(401);
    expect(login.body.code).toBe(10002);
    expect(await liveSessions(id)).toBe(0);
    jest.restoreAllMocks();
    await owner.post(LOGIN).send({ account: email, password: 'owner-new-password' }).expect(200);
    await attacker.post(LOGIN).send({ account: 'race_attacker1', password: 'attacker-password' }).expect(401);
  });

  it('a legacy hash re-stored after the check does not bring the old password back', async () => {
    const email = 'race.two@example.com';
    const legacy = bcrypt.hashSync('attacker-password', 10).replace(/^\$2[ab]\$/, '$2a$');
    const id = String(
      (
        await db.query(
          `INSERT INTO members (username, email, password_hash) VALUES ('race_attacker2', $1, $2) RETURNING id`,
          [email, legacy],
        )
      ).rows[0].id,
    );
    const code = await mailCode(email);
    const owner = client(app.url);
    afterNextPasswordCheck(async () => {
      await owner.post(RESET).send({ type: 'email', email, code, newPassword: 'owner-new-password' }).expect(200);
    });

    const attacker = client(app.url);
    const login = await attacker.post(LOGIN).send({ account: 'race_attacker2', password: 'attacker-password' });
    expect(login.status).toBe(401);
    expect(await liveSessions(id)).toBe(0);
    jest.restoreAllMocks();
    await attacker.post(LOGIN).send({ account: 'race_attacker2', password: 'attacker-password' }).expect(401);
    await owner.post(LOGIN).send({ account: email, password: 'owner-new-password' }).expect(200);
  });

  it('a reset that lands while the login is creating its session waits for it, then ends it', async () => {
    // The other interleaving: the login's hash check in the session transaction passed, the reset
    // stores its hash and ends the sessions before that transaction commits. The check holds the member
    // row FOR SHARE, so the reset's UPDATE waits for the commit and its revokeAll sees the session.
    const attacker = client(app.url);
    const id = (
      await attacker.post(REGISTER).send({ username: 'race_attacker4', password: 'attacker-password' }).expect(200)
    ).body.data.memberId;
    const verified = (await db.query(`SELECT password_hash FROM members WHERE id = $1`, [id])).rows[0].password_hash;
    const members = app.app.get(MembersService);
    const sessions = app.app.get(SessionsService);
    let reset: Promise<unknown> | undefined;
    const original = EntityManager.prototype.query;
    jest.spyOn(EntityManager.prototype, 'query').mockImplementation(async function (
      this: EntityManager,
      sql: string,
      params?: unknown[],
    ) {
      const rows = await original.call(this, sql, params);
      if (!reset && /FROM members WHERE id = \$1 AND password_hash = \$2/.test(sql)) {
        const done = { settled: false };
        reset = members
          .setPassword(id, 'owner-new-password')
          .then(() => sessions.revokeAll(id, 'password_reset'))
          .finally(() => (done.settled = true));
        // Go on once the reset is blocked on the member row, or (without the lock) has finished.
        await Promise.race([reset, waitForLockWaiter(done)]);
      }
      return rows;
    });
    const started = await sessions.start(id, 'password', { ip: '127.0.0.1', device: 'Unknown device' }, verified);
    jest.restoreAllMocks();
    expect(reset).toBeDefined();
    await reset;
    expect(started).not.toBeNull();
    expect(await liveSessions(id)).toBe(0);
  });

  /** Resolves when a statement of this database waits for a row lock (polls the server's own view). */
  const waitForLockWaiter = async (stop: { settled: boolean }) => {
    while (!stop.settled) {
      const { rows } = await db.query(
        `SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
      );
      if (Number(rows[0].n) > 0) return;
      await new Promise((r) => setImmediate(r));
    }
  };

  it('a password change whose old-password check came before the reset does not replace the owner’s password', async () => {
    const email = 'race.three@example.com';
    const attacker = client(app.url);
    await attacker
      .post(REGISTER)
      .send({ username: 'race_attacker3', email, password: 'attacker-password' })
      .expect(200);
    const session = await attacker
      .post(LOGIN)
      .send({ account: 'race_attacker3', password: 'attacker-password' })
      .expect(200);
    const code = await mailCode(email);
    const owner = client(app.url);
    afterNextPasswordCheck(async () => {
      await owner.post(RESET).send({ type: 'email', email, code, newPassword: 'owner-new-password' }).expect(200);
    });

    const change = await attacker
      .put(PASSWORD)
      .set(bearer(session.body.data.token))
      .send({ oldPassword: 'attacker-password', newPassword: 'attacker-again-pass' });
    expect(change.status).toBe(401);
    jest.restoreAllMocks();
    await attacker.post(LOGIN).send({ account: 'race_attacker3', password: 'attacker-again-pass' }).expect(401);
    await owner.post(LOGIN).send({ account: email, password: 'owner-new-password' }).expect(200);
  });
});
