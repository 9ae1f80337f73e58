import { randomBytes } from 'crypto';
import request from 'supertest';
import { Client } from 'pg';
import { BatchedCounter } from '../../libs/platform/src/rate-limit/batched-counter';
import { SharedState } from '../../libs/platform/src/shared-state/shared-state';
import { RunningApp, startMembership } from '../support/apps';
import { FakeClock } from '../support/clock';
import { backends } from '../scale-out/shared-backends';
import { openSharedState } from '../support/shared-state';

// Rate limits without a database write per authenticated request: strangers and refused credentials
// per client address, members per member (counted in batches), on both shared-state backends.
describe.each(backends('rate limit'))('batched counters, %s', (_label, backend) => {
  let state: SharedState;
  let close: () => Promise<void>;
  const id = randomBytes(6).toString('hex');

  beforeAll(async () => {
    ({ state, close } = await openSharedState(backend));
  });
  afterAll(() => close?.());

  it('incr adds the given amount, starting the lifetime at the first add', async () => {
    expect(await state.incr(`by-${id}`, 5000, 7)).toMatchObject({ count: 7 });
    const second = await state.incr(`by-${id}`, 5000, 5);
    expect(second.count).toBe(12);
    expect(second.ttlMs).toBeLessThanOrEqual(5000);
    expect(await state.incr(`by-${id}`, 5000)).toMatchObject({ count: 13 });
  });

  it('one replica never passes the limit; two replicas pass it by at most a batch each', async () => {
    // Windows are fixed minutes: a clock held in the middle of one keeps every hit in it (the real
    // clock could cross a minute boundary between hits, and the count would start again).
    const at = Math.floor(Date.now() / 60_000) * 60_000 + 30_000;
    const still = () => at;
    const alone = new BatchedCounter(state, `alone-${id}:`, 1000, still);
    const answers: number[] = [];
    for (let i = 0; i < 70; i++) answers.push(await alone.hit('m', 60, 60_000));
    expect(answers.filter((a) => a === 0)).toHaveLength(60);
    expect(answers.slice(60).every((a) => a > 0)).toBe(true);

    const a = new BatchedCounter(state, `pair-${id}:`, 1000, still);
    const b = new BatchedCounter(state, `pair-${id}:`, 1000, still);
    let allowed = 0;
    for (let i = 0; i < 200; i++) if ((await (i % 2 ? a : b).hit('m', 60, 60_000)) === 0) allowed++;
    // limit 60 -> batches of 3: each replica learns the other's hits at least every 3 of its own.
    expect(allowed).toBeGreaterThanOrEqual(60);
    expect(allowed).toBeLessThanOrEqual(60 + 2 * 3);
  });
});

describe('authentication limits on a running app', () => {
  let app: RunningApp;
  let db: Client;
  const LIMIT = 5;
  let n = 0;
  const ip = () => `198.51.100.${++n}`;
  const AUTH = '/api/v1/app/auth';

  beforeAll(async () => {
    // A clock that stands still: the per-member minute (a fixed window) cannot end between the calls.
    app = await startMembership({ RATE_LIMIT_PER_MINUTE: String(LIMIT) }, { clock: new FakeClock() });
    db = new Client({ connectionString: app.dbUrl });
    await db.connect();
  }, 60_000);
  afterAll(async () => {
    await db?.end();
    await app?.close();
  });

  const throttleRows = async () =>
    Number((await db.query(`SELECT count(*) FROM shared_state WHERE key LIKE 'throttle:default:%'`)).rows[0].count);
  const register = async () => {
    // Register opens no session: sign up, then log in.
    const username = `rl${randomBytes(4).toString('hex')}`;
    await request(app.url)
      .post(`${AUTH}/register`)
      .set('X-Forwarded-For', ip())
      .send({ username, password: 'rate-limit-password' })
      .expect(200);
    const res = await request(app.url)
      .post(`${AUTH}/login`)
      .set('X-Forwarded-For', ip())
      .send({ account: username, password: 'rate-limit-password' })
      .expect(200);
    return res.body.data.token as string;
  };

  it('members are limited per member across addresses, and their reads write no per-address counter', async () => {
    const token = await register();
    const before = await throttleRows();
    const statuses: number[] = [];
    for (let i = 0; i < LIMIT + 2; i++)
      statuses.push(
        (
          await request(app.url)
            .get(`${AUTH}/profile`)
            .set('X-Forwarded-For', ip())
            .set('Authorization', `Bearer ${token}`)
        ).status,
      );
    expect(statuses).toEqual([...Array(LIMIT).fill(200), 429, 429]);
    expect(await throttleRows()).toBe(before);
    // Another member is not affected.
    const other = await register();
    await request(app.url)
      .get(`${AUTH}/profile`)
      .set('X-Forwarded-For', ip())
      .set('Authorization', `Bearer ${other}`)
      .expect(200);
  });

  it('missing and refused credentials count per address; a blocked address is refused before its credentials are checked', async () => {
    const from = ip();
    const statuses: number[] = [];
    for (let i = 0; i < LIMIT; i++) {
      const req = request(app.url).get(`${AUTH}/profile`).set('X-Forwarded-For', from);
      statuses.push((await (i % 2 ? req.set('Authorization', 'Bearer not-a-token') : req)).status);
    }
    expect(statuses).toEqual(Array(LIMIT).fill(401));
    const blocked = await request(app.url).get(`${AUTH}/profile`).set('X-Forwarded-For', from).expect(429);
    expect(Number(blocked.headers['retry-after'])).toBeGreaterThan(0);
    expect(blocked.body.code).toBe(429);
    const token = await register();
    await request(app.url)
      .get(`${AUTH}/profile`)
      .set('X-Forwarded-For', from)
      .set('Authorization', `Bearer ${token}`)
      .expect(429);
    // Other addresses are not blocked.
    await request(app.url)
      .get(`${AUTH}/profile`)
      .set('X-Forwarded-For', ip())
      .set('Authorization', `Bearer ${token}`)
      .expect(200);
  });

  it('public routes keep the per-address limit', async () => {
    const from = ip();
    const statuses: number[] = [];
    for (let i = 0; i < LIMIT + 1; i++)
      statuses.push(
        (await request(app.url).get('/api/v1/admin/system/site-config/public').set('X-Forwarded-For', from)).status,
      );
    expect(statuses.slice(0, LIMIT).every((s) => s !== 429)).toBe(true);
    expect(statuses[LIMIT]).toBe(429);
  });
});
