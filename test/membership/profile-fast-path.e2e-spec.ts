// GET /api/v1/app/auth/profile is served outside the Express/Nest pipeline (ProfileFastPath); a query
// string sends the same call through the full pipeline. Both must answer alike: body, headers, errors,
// metrics, access log, rate limits, freshness after an update.
import { Client } from 'pg';
import request from 'supertest';
import pino from 'pino';
import { AccessLog } from '@app/platform';
import { ProfileFastPath } from '../../apps/membership/src/auth/profile-fast-path';
import { RunningApp, startMembership } from '../support/apps';
import { sqlClient } from '../support/database';
import { bearer, client } from './fakes';

const PROFILE = '/api/v1/app/auth/profile';
const PIPELINE = `${PROFILE}?via=pipeline`; // a query string never takes the fast path
const VARYING = new Set(['date', 'x-request-id', 'connection', 'keep-alive']);

async function register(app: RunningApp, username: string): Promise<{ token: string; memberId: string }> {
  await client(app.url).post('/api/v1/app/auth/register').send({ username, password: 'fast-path-password' }).expect(200);
  // Register opens no session: log in as the website does next.
  const res = await client(app.url).post('/api/v1/app/auth/login').send({ account: username, password: 'fast-path-password' }).expect(200);
  return res.body.data;
}

const stableHeaders = (headers: Record<string, string>) => Object.fromEntries(Object.entries(headers).filter(([k]) => !VARYING.has(k)));

describe('membership: profile fast path answers as the full pipeline does', () => {
  let app: RunningApp;
  let db: Client;
  let token: string;
  let memberId: string;

  beforeAll(async () => {
    app = await startMembership({ RATE_LIMIT_PER_MINUTE: '1000' });
    db = await sqlClient(app.dbUrl);
    ({ token, memberId } = await register(app, 'fast_path_1'));
    await db.query(
      `INSERT INTO member_identities (member_id, provider, subject, registration_id, nickname, avatar_url, created_time)
       VALUES ($1, 'github', 'gh-2', 'github', 'second', NULL, now()), ($1, 'gitee', 'ge-1', 'gitee', 'first', 'https://example.com/a.png', now() - interval '1 day')`,
      [memberId],
    );
  });
  afterAll(async () => {
    await db?.end();
    await app?.close();
  });

  it('same status, body and headers on both paths (identities oldest first)', async () => {
    const served = jest.spyOn(app.app.get(ProfileFastPath) as any, 'serve');
    const fast = await client(app.url).get(PROFILE).set(bearer(token)).expect(200);
    expect(served).toHaveBeenCalledTimes(1);
    const full = await client(app.url).get(PIPELINE).set(bearer(token)).expect(200);
    expect(served).toHaveBeenCalledTimes(1);
    served.mockRestore();
    expect(fast.body).toEqual(full.body);
    expect(fast.body.data).toMatchObject({ id: memberId, username: 'fast_path_1', roles: ['member'] });
    expect(fast.body.data.identities).toEqual([
      { provider: 'gitee', openId: 'ge-1', nickname: 'first', avatarUrl: 'https://example.com/a.png' },
      { provider: 'github', openId: 'gh-2', nickname: 'second', avatarUrl: null },
    ]);
    expect(stableHeaders(fast.headers)).toEqual(stableHeaders(full.headers));
    expect(fast.headers['x-content-type-options']).toBe('nosniff');
    expect(fast.headers['content-security-policy']).toBeDefined();
    expect(fast.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    expect(fast.text).toBe(full.text);
    const echoed = await client(app.url).get(PROFILE).set(bearer(token)).set('X-Request-Id', 'fast-probe-1').expect(200);
    expect(echoed.headers['x-request-id']).toBe('fast-probe-1');
  });

  it('conditional requests get the pipeline freshness check', async () => {
    await client(app.url).get(PROFILE).set(bearer(token)).set('If-None-Match', '*').expect(304);
    await client(app.url).get(PIPELINE).set(bearer(token)).set('If-None-Match', '*').expect(304);
  });

  it('an update is visible on the next read', async () => {
    await client(app.url).put(PROFILE).set(bearer(token)).send({ nickname: 'renamed' }).expect(200);
    expect((await client(app.url).get(PROFILE).set(bearer(token)).expect(200)).body.data.nickname).toBe('renamed');
    await db.query(`UPDATE members SET points = 42 WHERE id = $1`, [memberId]);
    expect((await client(app.url).get(PROFILE).set(bearer(token)).expect(200)).body.data.points).toBe(42);
  });

  it('refused credentials get the pipeline answer (401 envelope, same on both paths)', async () => {
    for (const auth of [`Bearer ${token}x`, 'Bearer not-a-jwt', 'Basic abc']) {
      const fast = await client(app.url).get(PROFILE).set('Authorization', auth).expect(401);
      const full = await client(app.url).get(PIPELINE).set('Authorization', auth).expect(401);
      expect(fast.body).toEqual(full.body);
      expect(fast.body).toEqual({ code: expect.any(Number), message: expect.any(String), data: null });
    }
    await client(app.url).get(PROFILE).expect(401);
  });

  it('a member deleted while its session check is still cached gets the 401 envelope', async () => {
    const gone = await register(app, 'fast_path_gone');
    await client(app.url).get(PROFILE).set(bearer(gone.token)).expect(200); // the session check is now cached (2 s)
    await db.query(`DELETE FROM members WHERE id = $1`, [gone.memberId]);
    const res = await client(app.url).get(PROFILE).set(bearer(gone.token)).set('X-Request-Id', 'gone-probe').expect(401);
    expect(res.body).toEqual({ code: 401, message: expect.any(String), data: null });
    expect(res.headers['x-request-id']).toBe('gone-probe');
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
  });

  it('counts metrics under the route pattern, the same series for both paths', async () => {
    const count = async () => {
      const text = (await request(app.url).get('/actuator/prometheus').expect(200)).text;
      const m = /^http_requests_total\{method="GET",route="\/api\/v1\/app\/auth\/profile",status="200"\} (\d+)$/m.exec(text);
      return m ? Number(m[1]) : 0;
    };
    const before = await count();
    await client(app.url).get(PROFILE).set(bearer(token)).expect(200);
    await client(app.url).get(PIPELINE).set(bearer(token)).expect(200);
    expect((await count()) - before).toBe(2);
  });

  it('writes one access log line per call with id, method, path (no query), status and time', async () => {
    const log = app.app.get(AccessLog).logger;
    const lines: Array<{ level: string; entry: any; msg: string }> = [];
    let allLogged!: () => void;
    const threeLogged = new Promise<void>((ok) => (allLogged = ok));
    const levels: Record<number, string> = { 30: 'info', 40: 'warn', 50: 'error' };
    // Tests run with a quiet LOG_LEVEL: the lines are caught on the logger's stream, the level check passed.
    const spies: jest.SpyInstance[] = [
      jest.spyOn((log as any)[pino.symbols.streamSym], 'write').mockImplementation(((line: string) => {
        const { level, time, app: appName, msg, ...entry } = JSON.parse(line);
        expect({ time, appName }).toEqual({ time: expect.any(Number), appName: 'membership' });
        lines.push({ level: levels[level], entry, msg });
        if (lines.length === 3) allLogged();
        return true;
      }) as any),
      jest.spyOn(log, 'isLevelEnabled').mockReturnValue(true),
    ];
    try {
      const fast = await client(app.url).get(PROFILE).set(bearer(token)).expect(200);
      const full = await client(app.url).get(`${PROFILE}?token=query-secret`).set(bearer(token)).expect(200);
      await client(app.url).get(PROFILE).set('Authorization', 'Bearer nope').expect(401);
      // The access lines are written as each response finishes: wait for the three of them.
      await threeLogged;
      expect(lines).toEqual([
        { level: 'info', msg: 'request completed', entry: { req: { id: fast.headers['x-request-id'], method: 'GET', url: PROFILE, remoteAddress: expect.any(String) }, res: { statusCode: 200 }, responseTime: expect.any(Number) } },
        { level: 'info', msg: 'request completed', entry: { req: { id: full.headers['x-request-id'], method: 'GET', url: PROFILE, remoteAddress: expect.any(String) }, res: { statusCode: 200 }, responseTime: expect.any(Number) } },
        { level: 'warn', msg: 'request completed', entry: expect.objectContaining({ res: { statusCode: 401 } }) },
      ]);
      expect(JSON.stringify(lines)).not.toContain(token);
    } finally {
      spies.forEach((s) => s.mockRestore());
    }
  });

  it('under CONTEXT_PATH: serves the prefixed path, same metrics series as the pipeline', async () => {
    const prefixed = await startMembership({ CONTEXT_PATH: '/ctx' });
    try {
      const member = await register(prefixed, 'fast_path_ctx');
      const served = jest.spyOn(prefixed.app.get(ProfileFastPath) as any, 'serve');
      const fast = await client(prefixed.url).get(PROFILE).set(bearer(member.token)).expect(200);
      expect(served).toHaveBeenCalledTimes(1);
      const full = await client(prefixed.url).get(PIPELINE).set(bearer(member.token)).expect(200);
      expect(served).toHaveBeenCalledTimes(1);
      expect(fast.text).toBe(full.text);
      const text = (await request(prefixed.url).get('/actuator/prometheus').expect(200)).text;
      expect(text).toMatch(/^http_requests_total\{method="GET",route="\/ctx\/api\/v1\/app\/auth\/profile",status="200"\} 2$/m);
    } finally {
      await prefixed.close();
    }
  });

  it('the per-member limit still applies (429 envelope with Retry-After; blocked addresses: test/platform/rate-limit)', async () => {
    const limited = await startMembership({ RATE_LIMIT_PER_MINUTE: '3' });
    try {
      const member = await register(limited, 'fast_path_limited');
      const from = '198.51.100.77';
      const statuses: number[] = [];
      for (let i = 0; i < 6; i++) statuses.push((await request(limited.url).get(PROFILE).set('X-Forwarded-For', from).set(bearer(member.token))).status);
      expect(statuses.slice(0, 3)).toEqual([200, 200, 200]);
      const refused = await request(limited.url).get(PROFILE).set('X-Forwarded-For', from).set(bearer(member.token)).expect(429);
      expect(refused.body).toEqual({ code: 429, message: expect.any(String), data: null });
      expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
      expect(refused.headers['x-content-type-options']).toBe('nosniff');
      expect(refused.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    } finally {
      await limited.close();
    }
  });
});
