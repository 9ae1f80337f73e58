/**
 * Scale-out: two membership instances on different ports, one PostgreSQL database, each
 * with its own DATA_DIR, files on one S3-compatible store, and shared short-lived state on
 * PostgreSQL or on Redis. Whatever a member does on one instance, the other one must see: they
 * behave as one service behind a load balancer without sticky sessions.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { randomBytes, randomInt } from 'crypto';
import type Redis from 'ioredis';
import { Client } from 'pg';
import request from 'supertest';
import { RunningApp, startMembership } from '../support/apps';
import { FakeClock } from '../support/clock';
import { sqlClient } from '../support/database';
import { startWechatServer, WechatTestServer } from '../support/wechat-server';
import { FakeAliyun, startFakeAliyun } from '../membership/fakes';
import {
  Backend,
  backends,
  forgetRedisKeys,
  randomAppId,
  randomIp,
  randomPhone,
  REDIS_PREFIX,
  redisClient,
  sleep,
} from './shared-backends';
import { tinyPng } from '../support/png';
// eslint-disable-next-line @typescript-eslint/no-require-imports -- s3rver ships no type declarations
const S3rver = require('s3rver');

const AUTH = '/api/v1/app/auth';
const FRONTEND = 'https://www.example.com/oauth/callback';
/** Long enough that the second-tab request lands inside it even on a loaded CI machine. */
const GRACE_MS = 3000;
const clock = new FakeClock();
/** The official account's scan-login QR codes an hour, for both instances together (WECHAT_QR_MAX_PER_HOUR). */
const QR_PER_HOUR = 12;
const HOUR_MS = 3_600_000;

describe.each(backends('scale-out membership'))(
  'scale-out: two membership instances, %s',
  (_label: string, backend: Backend) => {
    let a: RunningApp;
    let b: RunningApp;
    let sms: FakeAliyun;
    let wx: WechatTestServer;
    let s3: { run(): Promise<{ port: number }>; close(): Promise<void> };
    let db: Client;
    let redis: Redis | undefined;
    const tmpDirs: string[] = [];
    /** This run's random identifiers: Redis keys carrying them are deleted at the end. */
    const ours = new Set<string>();
    const MP = randomAppId();
    const run = randomBytes(3).toString('hex');

    const ip = () => {
      const v = randomIp();
      ours.add(`:${v}`);
      return v;
    };
    const phone = () => {
      const v = randomPhone();
      ours.add(v);
      return v;
    };
    /** supertest against one instance, as one client address (the apps trust X-Forwarded-For from loopback). */
    const on = (app: RunningApp, from: string) => ({
      get: (path: string) => request(app.url).get(path).set('X-Forwarded-For', from),
      post: (path: string) => request(app.url).post(path).set('X-Forwarded-For', from),
    });
    const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });
    /** Register opens no session: sign up, then log in on the same instance (the answer carries the session). */
    const signUp = async (via: ReturnType<typeof on>, username: string) => {
      await via.post(`${AUTH}/register`).send({ username, password: 'scale-out-password' }).expect(200);
      return via.post(`${AUTH}/login`).send({ account: username, password: 'scale-out-password' }).expect(200);
    };
    /** Whether the shared-state entry `key` is in PostgreSQL's shared_state table / in Redis. */
    const where = async (key: string) => ({
      postgres:
        (await db.query('SELECT 1 FROM shared_state WHERE key = $1 AND expires_at > now()', [key])).rowCount === 1,
      redis: redis ? (await redis.exists(REDIS_PREFIX + key)) === 1 : false,
    });

    beforeAll(async () => {
      ours.add(MP);
      sms = await startFakeAliyun();
      wx = await startWechatServer([
        {
          appId: MP,
          secret: `mp-secret-${run}`,
          kind: 'mp',
          token: `portalToken${run}`,
          originalId: 'gh_0123456789ab',
        },
      ]);
      const s3dir = mkdtempSync(join(tmpdir(), 'scale-out-s3-'));
      tmpDirs.push(s3dir);
      s3 = new S3rver({
        port: 0,
        address: '127.0.0.1',
        silent: true,
        directory: s3dir,
        configureBuckets: [{ name: 'member-media' }],
      });
      const s3endpoint = `http://127.0.0.1:${(await s3.run()).port}`;
      const clientsDir = mkdtempSync(join(tmpdir(), 'scale-out-clients-'));
      tmpDirs.push(clientsDir);
      const clientsFile = join(clientsDir, 'clients.json');
      writeFileSync(
        clientsFile,
        JSON.stringify({
          clients: [
            {
              registrationId: 'wechat-mp',
              provider: 'wechat-mp',
              clientId: MP,
              clientSecret: `mp-secret-${run}`,
              token: `portalToken${run}`,
              redirectUri: FRONTEND,
            },
          ],
        }),
      );
      const env = {
        ...backend.env,
        ...sms.env,
        OAUTH2_CLIENTS_FILE: clientsFile,
        WECHAT_OPEN_BASE: wx.url,
        WECHAT_API_BASE: wx.url,
        WECHAT_MP_BASE: wx.url,
        STORAGE_DRIVER: 's3',
        S3_BUCKET: 'member-media',
        S3_ENDPOINT: s3endpoint,
        S3_ACCESS_KEY_ID: 'S3RVER',
        S3_SECRET_ACCESS_KEY: 'S3RVER',
        S3_PREFIX: `scale-${run}`,
        REFRESH_REUSE_GRACE_MS: String(GRACE_MS),
        CODE_RESEND_INTERVAL_MS: '60000',
        WECHAT_QR_MAX_PER_HOUR: String(QR_PER_HOUR),
        // Random addresses of 10.0.0.0/8 may share a /24: the network share is tested in wechat-qrcode-network-share.e2e-spec.ts.
        WECHAT_QR_NETWORK_SHARE_PERCENT: '100',
      };
      // The first instance creates the database (and runs the migrations); the second joins it.
      // Both instances decide token expiry and the reuse grace by one clock the tests move (no sleeps).
      a = await startMembership(env, { clock });
      b = await startMembership(env, { dbUrl: a.dbUrl, clock });
      db = await sqlClient(a.dbUrl);
      // Member ids are a per-database sequence and some shared-state keys carry them (login lockouts:
      // `login:*:acct:m:<id>`). REDIS_KEY_PREFIX already separates runs; random ids also keep the
      // assertions independent of any other key in a shared Redis.
      await db.query(`ALTER TABLE members ALTER COLUMN id RESTART WITH ${randomInt(1_000_000_000, 9_000_000_000)}`);
      if (backend.name === 'redis') redis = redisClient();
    });

    afterAll(async () => {
      await db?.end();
      await b?.close();
      await a?.close(); // drops the database
      if (redis) {
        await forgetRedisKeys(redis, ours);
        redis.disconnect();
      }
      await Promise.all([sms?.close(), wx?.close(), s3?.close()]);
      for (const d of [...tmpDirs, a?.dataDir, b?.dataDir]) if (d) rmSync(d, { recursive: true, force: true });
    });

    it('runs two instances on different ports, one database, separate data directories, the expected state backend', async () => {
      expect(a.url).not.toBe(b.url);
      expect(b.dbUrl).toBe(a.dbUrl);
      expect(a.dataDir).not.toBe(b.dataDir);
      for (const app of [a, b]) {
        const ready = await request(app.url).get('/actuator/health/readiness').expect(200);
        expect(ready.body.status).toBe('UP');
        if (backend.name === 'redis') expect(ready.body.components?.redis?.status).toBe('UP');
        else expect(ready.body.components?.redis).toBeUndefined();
      }
    });

    it('a refresh token rotated on A is refused on B (after the concurrent-tab grace), and the reuse ends the session everywhere', async () => {
      const from = ip();
      const username = `so_${run}_${randomBytes(3).toString('hex')}`;
      const reg = await signUp(on(a, from), username);
      const first = reg.body.data as { token: string; refreshToken: string; memberId: string };
      // The access token issued by A works on B (same secret, same session table).
      expect((await on(b, from).get(`${AUTH}/profile`).set(bearer(first.token)).expect(200)).body.data.username).toBe(
        username,
      );

      const rotated = (
        await on(a, from).post(`${AUTH}/refresh-token`).send({ refreshToken: first.refreshToken }).expect(200)
      ).body.data;
      expect(rotated.refreshToken).not.toBe(first.refreshToken);
      // A second tab hitting B with the old token inside the grace window gets the same successor.
      const tab = (
        await on(b, from).post(`${AUTH}/refresh-token`).send({ refreshToken: first.refreshToken }).expect(200)
      ).body.data;
      expect(tab.refreshToken).toBe(rotated.refreshToken);

      clock.advance(GRACE_MS + 1);
      const reused = await on(b, from)
        .post(`${AUTH}/refresh-token`)
        .send({ refreshToken: first.refreshToken })
        .expect(401);
      expect(reused.body.code).toBe(401);
      // The reuse revoked the session: its successor and access tokens die on both instances.
      await on(a, from).post(`${AUTH}/refresh-token`).send({ refreshToken: rotated.refreshToken }).expect(401);
      await on(a, from).get(`${AUTH}/profile`).set(bearer(rotated.token)).expect(401);
      await on(b, from).get(`${AUTH}/profile`).set(bearer(first.token)).expect(401);
    });

    it('a rotation on A followed by the successor on B keeps one chain; the rotated token is refused on B', async () => {
      const from = ip();
      const reg = await signUp(on(b, from), `sc_${run}_${randomBytes(3).toString('hex')}`);
      const r1 = (
        await on(a, from).post(`${AUTH}/refresh-token`).send({ refreshToken: reg.body.data.refreshToken }).expect(200)
      ).body.data;
      const r2 = (await on(b, from).post(`${AUTH}/refresh-token`).send({ refreshToken: r1.refreshToken }).expect(200))
        .body.data;
      await on(a, from).get(`${AUTH}/profile`).set(bearer(r2.token)).expect(200);
      clock.advance(GRACE_MS + 1);
      await on(b, from).post(`${AUTH}/refresh-token`).send({ refreshToken: r1.refreshToken }).expect(401);
    });

    it('logout on B cuts the access token off on A at once', async () => {
      const from = ip();
      const reg = await signUp(on(a, from), `sl_${run}_${randomBytes(3).toString('hex')}`);
      await on(b, from).post(`${AUTH}/logout`).set(bearer(reg.body.data.token)).expect(200);
      await on(a, from).get(`${AUTH}/profile`).set(bearer(reg.body.data.token)).expect(401);
    });

    it('a session A has just seen live stops working on A within SESSION_CHECK_CACHE_MS (2 s) of a logout on B, on B at once', async () => {
      const from = ip();
      const reg = await signUp(on(a, from), `sc2_${run}_${randomBytes(3).toString('hex')}`);
      const token = reg.body.data.token;
      await on(a, from).get(`${AUTH}/profile`).set(bearer(token)).expect(200);
      await on(b, from).get(`${AUTH}/profile`).set(bearer(token)).expect(200);
      const loggedOut = Date.now();
      await on(b, from).post(`${AUTH}/logout`).set(bearer(token)).expect(200);
      await on(b, from).get(`${AUTH}/profile`).set(bearer(token)).expect(401);
      // A's cache entry was made before the logout, so A may answer 200 only to a request sent less than
      // 2 s after it (a request is sent before A checks it): no bound on how long the machine takes to answer.
      let status = 200;
      while (status === 200) {
        const sentAt = Date.now();
        status = (await on(a, from).get(`${AUTH}/profile`).set(bearer(token))).status;
        if (status === 200) {
          expect(sentAt - loggedOut).toBeLessThanOrEqual(2000);
          await sleep(100);
        }
      }
      expect(status).toBe(401);
    });

    it('a code sent via A verifies and logs in on B; the resend interval and the try budget are shared', async () => {
      const from = ip();
      const target = phone();
      await on(a, from).post(`${AUTH}/send-code`).send({ type: 'sms', phone: target }).expect(200);
      const code = sms.lastCode(target);
      expect(
        (await on(b, from).post(`${AUTH}/verify-code`).send({ type: 'sms', phone: target, code }).expect(200)).body
          .data,
      ).toEqual({ valid: true });
      // B knows a code went out through A a moment ago.
      const again = await on(b, from).post(`${AUTH}/send-code`).send({ type: 'sms', phone: target }).expect(429);
      expect(Number(again.headers['retry-after'])).toBeGreaterThan(50);
      const login = await on(b, from).post(`${AUTH}/login-by-phone`).send({ phone: target, code }).expect(200);
      await on(a, from).get(`${AUTH}/profile`).set(bearer(login.body.data.token)).expect(200);
      // Used up on B, so refused on A.
      expect(
        (await on(a, from).post(`${AUTH}/login-by-phone`).send({ phone: target, code }).expect(400)).body.code,
      ).toBe(10003);

      // Wrong guesses split across both instances exhaust one budget of 5.
      const other = phone();
      await on(b, from).post(`${AUTH}/send-code`).send({ type: 'sms', phone: other }).expect(200);
      const right = sms.lastCode(other);
      const wrong = String((Number(right) + 1) % 1_000_000).padStart(6, '0');
      for (let i = 0; i < 5; i++) {
        const res = await on(i % 2 ? b : a, from)
          .post(`${AUTH}/verify-code`)
          .send({ type: 'sms', phone: other, code: wrong });
        expect([400, 423]).toContain(res.status);
      }
      expect([400, 423]).toContain(
        (await on(a, from).post(`${AUTH}/login-by-phone`).send({ phone: other, code: right })).status,
      );
      expect(
        (await on(b, from).post(`${AUTH}/send-code`).send({ type: 'sms', phone: other }).expect(423)).body.code,
      ).toBe(10008);
    });

    it('wrong passwords split across A and B lock the account+IP pair at the same total', async () => {
      const from = ip();
      const username = `sk_${run}_${randomBytes(3).toString('hex')}`;
      ours.add(username);
      const reg = await signUp(on(a, from), username);
      ours.add(`:m:${reg.body.data.memberId}`);
      // LOGIN_MAX_FAILURES defaults to 5 for one account from one IP.
      for (let i = 0; i < 5; i++) {
        await on(i % 2 ? a : b, from)
          .post(`${AUTH}/login`)
          .send({ account: username, password: 'wrong-password' })
          .expect(401);
      }
      const locked = await on(a, from)
        .post(`${AUTH}/login`)
        .send({ account: username, password: 'scale-out-password' })
        .expect(423);
      expect(locked.body.code).toBe(10008);
      await on(b, from).post(`${AUTH}/login`).send({ account: username, password: 'scale-out-password' }).expect(423);
    });

    it('a per-IP rate limit counts requests across both instances (send-code: 10 per minute)', async () => {
      const from = ip();
      // Ten hits split 5/5: an in-process counter would see 5 per instance and never trip.
      for (let i = 0; i < 10; i++) {
        const res = await on(i % 2 ? b : a, from)
          .post(`${AUTH}/send-code`)
          .send({ type: 'fax' });
        expect(res.status).toBe(400); // counted by the throttler, then refused by validation
      }
      const tripped = await on(a, from).post(`${AUTH}/send-code`).send({ type: 'fax' }).expect(429);
      expect(tripped.body.code).toBe(429);
      expect(Number(tripped.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      await on(b, from).post(`${AUTH}/send-code`).send({ type: 'fax' }).expect(429);
      // Another client address is not affected.
      await on(b, ip()).post(`${AUTH}/send-code`).send({ type: 'fax' }).expect(400);
    });

    it('the shared counter is exact under concurrency: 30 parallel hits over both instances, exactly 10 get through', async () => {
      const from = ip();
      const statuses = await Promise.all(
        Array.from({ length: 30 }, (_, i) =>
          on(i % 2 ? b : a, from)
            .post(`${AUTH}/send-code`)
            .send({ type: 'fax' })
            .then((r) => r.status),
        ),
      );
      expect(statuses.filter((s) => s === 400)).toHaveLength(10);
      expect(statuses.filter((s) => s === 429)).toHaveLength(20);
    });

    it('an official-account QR scene created on A is scanned (event push) on B and exchanged via B, once', async () => {
      const tokenFetchesBefore = wx.calls.get('cgi-bin/token') ?? 0;
      const created = await on(a, ip()).post('/api/v1/app/oauth2/mp/qrcode?expireSeconds=120').expect(200);
      const qr = created.body.data;
      // The page that created the QR code keeps its binding cookie: only it can exchange the scene.
      const page = ((created.headers['set-cookie'] as unknown as string[]) ?? [])
        .map((c) => c.split(';')[0])
        .join('; ');
      expect(page).toMatch(/^oauth2_binding=/);
      ours.add(qr.sceneStr);
      expect(
        (await on(b, ip()).get(`/api/v1/app/oauth2/qrcode/state/${qr.sceneStr}`).expect(200)).body.data.qrcodeState,
      ).toBe(0);
      // The scene lives in the configured backend only.
      expect(await where(`oauth2:qr:${qr.sceneStr}`)).toEqual(
        backend.name === 'redis' ? { postgres: false, redis: true } : { postgres: true, redis: false },
      );

      // WeChat pushes the SCAN event to the server URL, which the load balancer sends to B.
      wx.setPortal(MP, `${b.url}/api/v1/wechat/portal/${MP}`);
      const createTime = Math.floor(Date.now() / 1000);
      const pushed = await wx.scan(qr.ticket, { event: 'SCAN', createTime });
      expect(pushed.status).toBe(200);
      expect(pushed.reply?.Content).toContain('Login confirmed');
      expect(
        (await on(a, ip()).get(`/api/v1/app/oauth2/qrcode/state/${qr.sceneStr}`).expect(200)).body.data.qrcodeState,
      ).toBe(2);

      // WeChat retries the same push, this time landing on A: processed once.
      wx.setPortal(MP, `${a.url}/api/v1/wechat/portal/${MP}`);
      expect(await wx.scan(qr.ticket, { event: 'SCAN', createTime })).toMatchObject({ status: 200, body: 'success' });

      const login = await on(b, ip())
        .get(`/api/v1/app/oauth2/callback?state=${qr.sceneStr}`)
        .set('Cookie', page)
        .expect(200);
      expect(login.body.data).toMatchObject({ openId: wx.openidOf(MP, wx.user), tokenType: 'Bearer' });
      await on(a, ip()).get(`${AUTH}/profile`).set(bearer(login.body.data.token)).expect(200);
      expect(
        (await on(a, ip()).get(`/api/v1/app/oauth2/callback?state=${qr.sceneStr}`).set('Cookie', page).expect(400)).body
          .code,
      ).toBe(10003);
      expect(
        (await on(b, ip()).get(`/api/v1/app/oauth2/callback?state=${qr.sceneStr}`).set('Cookie', page).expect(400)).body
          .code,
      ).toBe(10003);

      // One official-account access token serves both instances (fetched at most once).
      ours.add((await on(b, ip()).post('/api/v1/app/oauth2/mp/qrcode').expect(200)).body.data.sceneStr);
      ours.add((await on(a, ip()).post('/api/v1/app/oauth2/mp/qrcode').expect(200)).body.data.sceneStr);
      expect((wx.calls.get('cgi-bin/token') ?? 0) - tokenFetchesBefore).toBeLessThanOrEqual(1);
    });

    it('a file uploaded through A is served by B (one object store, separate data directories)', async () => {
      const from = ip();
      const reg = await signUp(on(a, from), `sf_${run}_${randomBytes(3).toString('hex')}`);
      const bytes = tinyPng();
      const up = await request(a.url)
        .post('/api/v1/app/files')
        .set('X-Forwarded-For', from)
        .set(bearer(reg.body.data.token))
        .attach('file', bytes, { filename: 'a.png', contentType: 'image/png' })
        .expect(200);
      const served = await request(b.url).get(up.body.data.url).buffer(true).expect(200);
      expect(served.headers['content-type']).toBe('image/png');
      expect(Buffer.compare(served.body as Buffer, bytes)).toBe(0);
    });

    // Last here: it moves the shared clock on by hours.
    it("the official account's qrcode/create budget is one for both instances: an address stops at its own limit, the rest stop at the budget exactly, the next hour opens it", async () => {
      const QR = '/api/v1/app/oauth2/mp/qrcode';
      const creates = () => wx.calls.get('cgi-bin/qrcode/create') ?? 0;
      clock.advance(HOUR_MS); // an hour of the Clock no earlier test has spent codes in
      const start = creates();
      // One browser that keeps its cookie is given its code back on either instance: one call.
      const page = await on(a, ip()).post(QR).expect(200);
      const cookie = (page.headers['set-cookie'] as unknown as string[]).map((c) => c.split(';')[0]).join('; ');
      ours.add(page.body.data.sceneStr);
      for (const app of [a, b, a])
        expect((await on(app, ip()).post(QR).set('Cookie', cookie).expect(200)).body.data.sceneStr).toBe(
          page.body.data.sceneStr,
        );
      expect(creates() - start).toBe(1);

      // One address asking as ever new browsers: the route's per-address limit (10 a minute) stops it first.
      const one = ip();
      const alone: number[] = [];
      for (let i = 0; i < 11; i++) alone.push((await on(i % 2 ? b : a, one).post(QR)).status);
      expect(alone).toEqual([...Array(10).fill(200), 429]);
      expect(creates() - start).toBe(11);

      // Many addresses at once over both instances: exactly the budget's last code is made.
      const many = await Promise.all(Array.from({ length: 8 }, (_, i) => on(i % 2 ? b : a, ip()).post(QR)));
      expect(many.filter((r) => r.status === 200)).toHaveLength(QR_PER_HOUR - 11);
      const refused = many.filter((r) => r.status !== 200);
      expect(refused).toHaveLength(8 - (QR_PER_HOUR - 11));
      for (const r of refused) {
        expect(r.status).toBe(429);
        expect(r.body).toMatchObject({ code: 429, message: expect.stringContaining('this hour') });
        expect(Number(r.headers['retry-after'])).toBeGreaterThanOrEqual(1);
        expect(Number(r.headers['retry-after'])).toBeLessThanOrEqual(3600);
      }
      expect(creates() - start).toBe(QR_PER_HOUR);
      // A spent budget still gives a browser its own waiting code back.
      expect((await on(b, ip()).post(QR).set('Cookie', cookie).expect(200)).body.data.sceneStr).toBe(
        page.body.data.sceneStr,
      );

      clock.advance(HOUR_MS);
      ours.add((await on(b, ip()).post(QR).expect(200)).body.data.sceneStr);
      expect(creates() - start).toBe(QR_PER_HOUR + 1);
    });
  },
);
