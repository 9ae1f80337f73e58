import { createHmac, sign as ecSign } from 'crypto';
import { Client } from 'pg';
import { RunningApp, startMembership } from '../support/apps';
import { FakeClock } from '../support/clock';
import { sqlClient } from '../support/database';
import { AccessTokenKeys } from '../../apps/membership/src/auth/access-token-keys';
import { SessionsRepository, USED_TOKENS_KEPT } from '../../apps/membership/src/sessions/sessions.repository';
import { VerificationCodesRepository } from '../../apps/membership/src/verification/verification-codes.repository';
import { bearer, client } from './fakes';

const SECRET = 'test-secret-test-secret-test-secret-0123456789';
const PROFILE = '/api/v1/app/auth/profile';
const REFRESH = '/api/v1/app/auth/refresh-token';
const BY_JWT = '/api/v1/app/auth/refresh-token-by-jwt';
const SESSIONS = '/api/v1/app/security/client-sessions';

const b64 = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
const decode = (jwt: string) => JSON.parse(Buffer.from(jwt.split('.')[1], 'base64url').toString());
function sign(header: object, payload: object, key: string | Buffer): string {
  const body = `${b64(header)}.${b64(payload)}`;
  return `${body}.${createHmac('sha256', key).update(body).digest('base64url')}`;
}
/** ES256 (JOSE signature: r||s) with the app's signing key, naming it in the header. */
function signEs256(app: RunningApp, payload: object, header: object = {}): string {
  const key = app.app.get(AccessTokenKeys).signing;
  const body = `${b64({ alg: 'ES256', typ: 'JWT', kid: key.kid, ...header })}.${b64(payload)}`;
  return `${body}.${ecSign('sha256', Buffer.from(body), { key: key.privateKey, dsaEncoding: 'ieee-p1363' }).toString('base64url')}`;
}
// The HS256 key of before the switch: derived from JWT_SECRET (one key per purpose).
const accessKey = createHmac('sha256', SECRET).update('membership:access-token:v1').digest('base64url');

async function login(app: RunningApp, username: string, ua?: string) {
  const c = client(app.url);
  const req = c.post('/api/v1/app/auth/login');
  if (ua) req.set('User-Agent', ua);
  const res = await req.send({ account: username, password: 'token-password' }).expect(200);
  return res.body.data as {
    token: string;
    refreshToken: string;
    memberId: string;
    expiresIn: number;
    refreshExpiresIn: number;
  };
}

describe('membership: access tokens, refresh rotation, sessions', () => {
  let app: RunningApp;
  let db: Client;
  // The app's time: it stands still while 8 parallel refreshes race, and moves past the reuse grace on purpose.
  const clock = new FakeClock();
  const GRACE_MS = 4000;

  beforeAll(async () => {
    app = await startMembership({ REFRESH_REUSE_GRACE_MS: String(GRACE_MS) }, { clock });
    db = await sqlClient(app.dbUrl);
    for (const u of ['tok_user', 'tok_other']) {
      await client(app.url)
        .post('/api/v1/app/auth/register')
        .send({ username: u, password: 'token-password' })
        .expect(200);
    }
  });
  afterAll(async () => {
    await db?.end();
    await app?.close();
  });

  it('the JWT carries the contract claims and expiresIn equals its real lifetime', async () => {
    const t = await login(app, 'tok_user');
    const header = JSON.parse(Buffer.from(t.token.split('.')[0], 'base64url').toString());
    const claims = decode(t.token);
    expect(header).toEqual({ alg: 'ES256', typ: 'JWT', kid: app.app.get(AccessTokenKeys).signing.kid });
    expect(claims).toMatchObject({
      sub: t.memberId,
      memberId: t.memberId,
      type: 'member',
      loginType: 'password',
      sid: expect.any(String),
      jti: expect.any(String),
    });
    expect((claims.exp - claims.iat) * 1000).toBe(t.expiresIn);
    expect(t.expiresIn).toBe(1800000);
  });

  describe('attacks on the access token get 401', () => {
    let good: string;
    let claims: any;
    beforeAll(async () => {
      good = (await login(app, 'tok_user')).token;
      claims = decode(good);
    });

    it('no token, garbage, and a non-Bearer scheme', async () => {
      for (const h of [undefined, 'Bearer garbage', `Basic ${good}`, 'Bearer a.b.c']) {
        const req = client(app.url).get(PROFILE);
        if (h) req.set('Authorization', h);
        const res = await req.expect(401);
        expect(res.body.code).toBe(401);
      }
    });

    it('alg none', async () => {
      const none = `${b64({ alg: 'none', typ: 'JWT' })}.${b64(claims)}.`;
      await client(app.url).get(PROFILE).set(bearer(none)).expect(401);
    });

    it('HS512 or HS384 signed with the right key (algorithm is pinned)', async () => {
      const body = `${b64({ alg: 'HS512', typ: 'JWT' })}.${b64(claims)}`;
      const hs512 = `${body}.${createHmac('sha512', accessKey).update(body).digest('base64url')}`;
      await client(app.url).get(PROFILE).set(bearer(hs512)).expect(401);
    });

    it('wrong key (even the raw JWT_SECRET)', async () => {
      await client(app.url)
        .get(PROFILE)
        .set(bearer(sign({ alg: 'HS256', typ: 'JWT' }, claims, 'another-secret')))
        .expect(401);
      await client(app.url)
        .get(PROFILE)
        .set(bearer(sign({ alg: 'HS256', typ: 'JWT' }, claims, SECRET)))
        .expect(401);
    });

    it('tampered payload (another member id) keeps the old signature', async () => {
      const [h, , s] = good.split('.');
      const forged = `${h}.${b64({ ...claims, sub: '999', memberId: '999' })}.${s}`;
      await client(app.url).get(PROFILE).set(bearer(forged)).expect(401);
    });

    it('expired', async () => {
      const now = Math.floor(clock.now() / 1000);
      const expired = signEs256(app, { ...claims, iat: now - 3600, exp: now - 10 });
      const res = await client(app.url).get(PROFILE).set(bearer(expired)).expect(401);
      expect(res.body.code).toBe(401);
    });

    it('a token of another type signed with the right key', async () => {
      for (const type of ['admin', 'refresh', undefined]) {
        const other = signEs256(app, { ...claims, type });
        await client(app.url).get(PROFILE).set(bearer(other)).expect(401);
      }
      // Control: the same construction with type "member" is accepted, so the checks above are meaningful.
      await client(app.url)
        .get(PROFILE)
        .set(bearer(signEs256(app, claims)))
        .expect(200);
    });

    it('an unknown kid, or ES256 signed with another key under the right kid', async () => {
      await client(app.url)
        .get(PROFILE)
        .set(bearer(signEs256(app, claims, { kid: 'not-a-key' })))
        .expect(401);
      const [h, p] = good.split('.');
      const other = (await import('crypto')).generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;
      const forged = `${h}.${p}.${ecSign('sha256', Buffer.from(`${h}.${p}`), { key: other, dsaEncoding: 'ieee-p1363' }).toString('base64url')}`;
      await client(app.url).get(PROFILE).set(bearer(forged)).expect(401);
    });

    it('an HS256 token signed before the switch (issued before the app started) is still accepted; one issued after it is not', async () => {
      // The app started after this clock was made (and it has not moved yet): far on either side of that start.
      const nowSeconds = Math.floor(clock.now() / 1000);
      const old = sign(
        { alg: 'HS256', typ: 'JWT' },
        { ...claims, iat: nowSeconds - 600, exp: nowSeconds + 600 },
        accessKey,
      );
      await client(app.url).get(PROFILE).set(bearer(old)).expect(200);
      const minted = sign(
        { alg: 'HS256', typ: 'JWT' },
        { ...claims, iat: nowSeconds + 900, exp: nowSeconds + 1200 },
        accessKey,
      );
      await client(app.url).get(PROFILE).set(bearer(minted)).expect(401);
    });
  });

  it('a short ACCESS_TOKEN_TTL is reported and enforced', async () => {
    // On a whole second, so iat is exactly the clock's time and the token ends exactly 2000 ms later.
    const shortClock = new FakeClock(Math.ceil(Date.now() / 1000) * 1000);
    const short = await startMembership({ ACCESS_TOKEN_TTL: '2000' }, { clock: shortClock });
    try {
      await client(short.url)
        .post('/api/v1/app/auth/register')
        .send({ username: 'short_ttl', password: 'token-password' })
        .expect(200);
      const t = await login(short, 'short_ttl');
      expect(t.expiresIn).toBe(2000);
      expect(decode(t.token).iat * 1000).toBe(shortClock.now());
      await client(short.url).get(PROFILE).set(bearer(t.token)).expect(200);
      shortClock.advance(1999);
      await client(short.url).get(PROFILE).set(bearer(t.token)).expect(200);
      shortClock.advance(1);
      await client(short.url).get(PROFILE).set(bearer(t.token)).expect(401);
      // Inside the refresh window (whole lifetime here) refresh-token-by-jwt works; after expiry the refresh token does.
      const renewed = await client(short.url).post(REFRESH).send({ refreshToken: t.refreshToken }).expect(200);
      await client(short.url).get(PROFILE).set(bearer(renewed.body.data.token)).expect(200);
    } finally {
      await short.close();
    }
  });

  describe('refresh-token', () => {
    it('rotates: the old token dies, the new one works, hashes only at rest', async () => {
      const t = await login(app, 'tok_user');
      const r1 = await client(app.url).post(REFRESH).send({ refreshToken: t.refreshToken }).expect(200);
      expect(r1.body.data).toMatchObject({
        memberId: t.memberId,
        username: 'tok_user',
        tokenType: 'Bearer',
        expiresIn: 1800000,
        refreshExpiresIn: 2592000000,
      });
      expect(r1.body.data.refreshToken).not.toBe(t.refreshToken);
      expect(decode(r1.body.data.token).sid).toBe(decode(t.token).sid);
      const stored = await db.query(`SELECT token_hash FROM member_refresh_tokens WHERE session_id = $1`, [
        decode(t.token).sid,
      ]);
      expect(stored.rows).toHaveLength(2);
      for (const row of stored.rows) {
        expect(row.token_hash).toMatch(/^[0-9a-f]{64}$/);
        expect([t.refreshToken, r1.body.data.refreshToken]).not.toContain(row.token_hash);
      }
      await client(app.url).post(REFRESH).send({ refreshToken: r1.body.data.refreshToken }).expect(200);
    });

    it('N parallel refreshes with one token all get the same successor: one live chain', async () => {
      const t = await login(app, 'tok_user');
      const results = await Promise.all(
        Array.from({ length: 8 }, () => client(app.url).post(REFRESH).send({ refreshToken: t.refreshToken })),
      );
      expect(results.map((r) => r.status)).toEqual(Array(8).fill(200));
      const successors = new Set(results.map((r) => r.body.data.refreshToken));
      expect(successors.size).toBe(1);
      const sid = decode(t.token).sid;
      const live = await db.query(
        `SELECT count(*)::int AS n FROM member_refresh_tokens WHERE session_id = $1 AND used_time IS NULL`,
        [sid],
      );
      expect(live.rows[0].n).toBe(1);
      await client(app.url)
        .post(REFRESH)
        .send({ refreshToken: [...successors][0] })
        .expect(200);
    });

    it('reuse after the grace window revokes the whole session (access token included)', async () => {
      const t = await login(app, 'tok_user');
      const r1 = await client(app.url).post(REFRESH).send({ refreshToken: t.refreshToken }).expect(200);
      // At the end of the grace a replay still gets the same successor; a millisecond later it is reuse.
      clock.advance(GRACE_MS);
      expect(
        (await client(app.url).post(REFRESH).send({ refreshToken: t.refreshToken }).expect(200)).body.data.refreshToken,
      ).toBe(r1.body.data.refreshToken);
      clock.advance(1);
      const replay = await client(app.url).post(REFRESH).send({ refreshToken: t.refreshToken }).expect(401);
      expect(replay.body.code).toBe(401);
      // The legitimate chain dies with it, and so do access tokens of the session, at once.
      await client(app.url).post(REFRESH).send({ refreshToken: r1.body.data.refreshToken }).expect(401);
      await client(app.url).get(PROFILE).set(bearer(r1.body.data.token)).expect(401);
      const s = await db.query(`SELECT revoked_reason FROM member_sessions WHERE id = $1`, [decode(t.token).sid]);
      expect(s.rows[0].revoked_reason).toBe('refresh_reuse');
    });

    it('unknown, empty and expired refresh tokens', async () => {
      await client(app.url).post(REFRESH).send({ refreshToken: 'not-a-real-token' }).expect(401);
      expect((await client(app.url).post(REFRESH).send({}).expect(400)).body.code).toBe(10000);
      const t = await login(app, 'tok_user');
      await db.query(`UPDATE member_refresh_tokens SET expires_time = $2 WHERE session_id = $1`, [
        decode(t.token).sid,
        new Date(clock.now() - 1000),
      ]);
      await client(app.url).post(REFRESH).send({ refreshToken: t.refreshToken }).expect(401);
    });
  });

  describe('refresh-token-by-jwt', () => {
    it('refuses a fresh token (outside the last 5 minutes) with 400 and renews inside the window', async () => {
      const t = await login(app, 'tok_user');
      const early = await client(app.url).post(BY_JWT).set(bearer(t.token)).expect(400);
      expect(early.body.code).toBe(400);
      await client(app.url).post(BY_JWT).expect(401);
      const wide = await startMembership({ REFRESH_BY_JWT_WINDOW: '3600000' });
      try {
        await client(wide.url)
          .post('/api/v1/app/auth/register')
          .send({ username: 'jwt_renew', password: 'token-password' })
          .expect(200);
        const w = await login(wide, 'jwt_renew');
        const res = await client(wide.url).post(BY_JWT).set(bearer(w.token)).expect(200);
        expect(res.body.data).toEqual({ token: expect.any(String), tokenType: 'Bearer', expiresIn: 1800000 });
        expect(decode(res.body.data.token).sid).toBe(decode(w.token).sid);
        expect(decode(res.body.data.token).jti).not.toBe(decode(w.token).jti);
        await client(wide.url).get(PROFILE).set(bearer(res.body.data.token)).expect(200);
      } finally {
        await wide.close();
      }
    });
  });

  describe('logout and client sessions', () => {
    it('logout ends the session at once: access and refresh tokens refused', async () => {
      const t = await login(app, 'tok_user');
      await client(app.url).get(PROFILE).set(bearer(t.token)).expect(200);
      await client(app.url)
        .post('/api/v1/app/auth/logout')
        .set(bearer(t.token))
        .expect(200, { code: 200, message: 'success', data: null });
      await client(app.url).get(PROFILE).set(bearer(t.token)).expect(401);
      await client(app.url).post(REFRESH).send({ refreshToken: t.refreshToken }).expect(401);
    });

    it('lists sessions with device and current flag, and revokes one by id', async () => {
      const phone = await login(
        app,
        'tok_other',
        'Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 Version/17.0 Mobile/15E148 Safari/604.1',
      );
      const desk = await login(
        app,
        'tok_other',
        'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 Chrome/130.0 Safari/537.36',
      );
      const list = await client(app.url).get(SESSIONS).set(bearer(desk.token)).expect(200);
      const mine = list.body.data as any[];
      // Registration opens no session: the two logins, exactly one of them current.
      expect(mine).toHaveLength(2);
      expect(mine.filter((s) => s.current)).toEqual([
        expect.objectContaining({ id: decode(desk.token).sid, deviceName: 'Chrome on Windows', loginType: 'password' }),
      ]);
      expect(mine.find((s) => s.id === decode(phone.token).sid)).toMatchObject({
        deviceName: 'Safari on iOS',
        current: false,
      });
      await client(app.url)
        .delete(`${SESSIONS}/${decode(phone.token).sid}`)
        .set(bearer(desk.token))
        .expect(200);
      await client(app.url).get(PROFILE).set(bearer(phone.token)).expect(401);
      await client(app.url)
        .delete(`${SESSIONS}/${decode(phone.token).sid}`)
        .set(bearer(desk.token))
        .expect(404);
      // Another member's session cannot be revoked (404, not 403: no probing).
      const other = await login(app, 'tok_user');
      expect(
        (
          await client(app.url)
            .delete(`${SESSIONS}/${decode(other.token).sid}`)
            .set(bearer(desk.token))
            .expect(404)
        ).body.code,
      ).toBe(404);
      await client(app.url).get(PROFILE).set(bearer(other.token)).expect(200);
      await client(app.url).delete(`${SESSIONS}/not-a-uuid`).set(bearer(desk.token)).expect(404);
      await client(app.url).get(SESSIONS).expect(401);
    });

    it('password change ends every other session and needs the old password', async () => {
      await client(app.url)
        .post('/api/v1/app/auth/register')
        .send({ username: 'pw_changer', password: 'token-password' })
        .expect(200);
      const a = await login(app, 'pw_changer');
      const b = await login(app, 'pw_changer');
      const wrong = await client(app.url)
        .put('/api/v1/app/auth/password')
        .set(bearer(a.token))
        .send({ oldPassword: 'nope-nope', newPassword: 'brand-new-password' })
        .expect(401);
      expect(wrong.body.code).toBe(10002);
      const ok = await client(app.url)
        .put('/api/v1/app/auth/password')
        .set(bearer(a.token))
        .send({ oldPassword: 'token-password', newPassword: 'brand-new-password' })
        .expect(200);
      // b (registration opens no session).
      expect(ok.body.data).toEqual({ revokedSessions: 1 });
      await client(app.url).get(PROFILE).set(bearer(a.token)).expect(200);
      await client(app.url).get(PROFILE).set(bearer(b.token)).expect(401);
      await client(app.url).post(REFRESH).send({ refreshToken: b.refreshToken }).expect(401);
      await client(app.url)
        .post('/api/v1/app/auth/login')
        .send({ account: 'pw_changer', password: 'token-password' })
        .expect(401);
      await client(app.url)
        .post('/api/v1/app/auth/login')
        .send({ account: 'pw_changer', password: 'brand-new-password' })
        .expect(200);
    });

    it('housekeeping drops long-ended sessions, dead refresh tokens and day-old codes, and nothing live', async () => {
      const live = await login(app, 'tok_user');
      const old = await login(app, 'tok_user');
      const oldSid = decode(old.token).sid;
      await db.query(`UPDATE member_sessions SET revoked_time = now() - interval '8 days' WHERE id = $1`, [oldSid]);
      await db.query(
        `INSERT INTO verification_codes (channel, target, code_hash, max_attempts, expires_time, created_time) VALUES ('sms', '13700009999', repeat('a', 64), 5, now() - interval '2 days', now() - interval '2 days')`,
      );
      await app.app.get(SessionsRepository).sweep();
      await app.app.get(VerificationCodesRepository).sweep();
      expect((await db.query(`SELECT 1 FROM member_sessions WHERE id = $1`, [oldSid])).rows).toHaveLength(0);
      expect((await db.query(`SELECT 1 FROM member_refresh_tokens WHERE session_id = $1`, [oldSid])).rows).toHaveLength(
        0,
      );
      expect((await db.query(`SELECT 1 FROM verification_codes WHERE target = '13700009999'`)).rows).toHaveLength(0);
      await client(app.url).get(PROFILE).set(bearer(live.token)).expect(200);
      await client(app.url).post(REFRESH).send({ refreshToken: live.refreshToken }).expect(200);
    });

    it('a disabled member is cut off at the guard', async () => {
      await client(app.url)
        .post('/api/v1/app/auth/register')
        .send({ username: 'to_disable', password: 'token-password' })
        .expect(200);
      const t = await login(app, 'to_disable');
      await db.query(`UPDATE members SET status = 'disabled' WHERE username = 'to_disable'`);
      await client(app.url).get(PROFILE).set(bearer(t.token)).expect(401);
      await client(app.url).post(REFRESH).send({ refreshToken: t.refreshToken }).expect(401);
    });
  });
});

describe('membership: what one member can keep (sessions, refresh tokens)', () => {
  let app: RunningApp;
  let db: Client;
  const clock = new FakeClock();

  beforeAll(async () => {
    app = await startMembership({ MAX_SESSIONS_PER_MEMBER: '3', SESSION_CHECK_CACHE_MS: '0' }, { clock });
    db = await sqlClient(app.dbUrl);
    await client(app.url)
      .post('/api/v1/app/auth/register')
      .send({ username: 'many_logins', password: 'token-password' })
      .expect(200);
  });
  afterAll(async () => {
    await db?.end();
    await app?.close();
  });

  it('keeps at most MAX_SESSIONS_PER_MEMBER live sessions: a sign-in past it ends the least recently active one, rows included', async () => {
    const logins = [];
    for (let i = 0; i < 5; i++) logins.push(await login(app, 'many_logins'));
    const memberId = logins[0].memberId;
    const rows = await db.query(`SELECT id FROM member_sessions WHERE member_id = $1`, [memberId]);
    expect(rows.rows.map((r) => r.id).sort()).toEqual(
      logins
        .slice(2)
        .map((l) => decode(l.token).sid)
        .sort(),
    );
    for (const old of logins.slice(0, 2)) {
      await client(app.url).get(PROFILE).set(bearer(old.token)).expect(401);
      await client(app.url).post(REFRESH).send({ refreshToken: old.refreshToken }).expect(401);
    }
    const list = await client(app.url).get(SESSIONS).set(bearer(logins[4].token)).expect(200);
    expect(list.body.data).toHaveLength(3);
  });

  it('keeps the newest used refresh tokens of a session only (replays of those still end it)', async () => {
    const t = await login(app, 'many_logins');
    const sid = decode(t.token).sid;
    let token = t.refreshToken;
    const used: string[] = [];
    for (let i = 0; i < USED_TOKENS_KEPT + 8; i++) {
      used.push(token);
      token = (await client(app.url).post(REFRESH).send({ refreshToken: token }).expect(200)).body.data.refreshToken;
    }
    const counted = await db.query(
      `SELECT count(*) FILTER (WHERE used_time IS NOT NULL)::int AS used, count(*)::int AS all FROM member_refresh_tokens WHERE session_id = $1`,
      [sid],
    );
    expect(counted.rows[0]).toEqual({ used: USED_TOKENS_KEPT, all: USED_TOKENS_KEPT + 1 });
    // Past the reuse grace: the oldest is gone (refused as unknown, the session lives on); a kept one
    // replayed ends the session.
    clock.advance(60_000);
    await client(app.url).post(REFRESH).send({ refreshToken: used[0] }).expect(401);
    await client(app.url).get(PROFILE).set(bearer(t.token)).expect(200);
    await client(app.url)
      .post(REFRESH)
      .send({ refreshToken: used[used.length - 2] })
      .expect(401);
    await client(app.url).post(REFRESH).send({ refreshToken: token }).expect(401);
  });
});
