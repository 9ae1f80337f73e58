// Bodies being read hold memory: a member's withheld gzip bodies hold at most BODY_BYTES_PER_CALLER_MAX of a
// replica (the next is 429 before it is read), and a body arriving slower than 16 KiB/s on average is cut with
// 408 after its first 10 s on the app's clock (body-budget.ts, body-arrival.ts in libs/platform).
import { gzipSync } from 'zlib';
import { BODY_RATE_GRACE_MS, BodyBudget } from '@app/platform';
import { RunningApp, startMembership } from '../support/apps';
import { FakeClock } from '../support/clock';
import { until } from '../support/until';
import { gzippedJson, withheldBody } from '../support/withheld-body';
import { bearer, client } from './fakes';

const PROFILE = '/api/v1/app/auth/profile';
/** The defaults: BODY_LIMIT_BYTES and BODY_BYTES_PER_CALLER_MAX. */
const LIMIT = 1024 * 1024;
const PER_CALLER = 4 * LIMIT;

describe('membership: request bodies being read', () => {
  // REQUEST_TIMEOUT_MS far away: only the body budget and the arrival rate act here.
  const clock = new FakeClock();
  let app: RunningApp;
  let budget: BodyBudget;
  beforeAll(async () => {
    app = await startMembership({ REQUEST_TIMEOUT_MS: '600000' }, { clock });
    budget = app.app.get(BodyBudget);
  });
  afterAll(() => app?.close());

  const member = async (username: string): Promise<string> => {
    const c = client(app.url);
    await c.post('/api/v1/app/auth/register').send({ username, password: 'bodies-password' }).expect(200);
    const res = await c.post('/api/v1/app/auth/login').send({ account: username, password: 'bodies-password' });
    expect(res.status).toBe(200);
    return res.body.data.token;
  };
  /** A profile update whose gzip body of exactly `bytes` inflated bytes is sent but for its last `withhold`. */
  const withheld = (token: string, bytes: number, withhold?: number) => {
    const body = gzippedJson(bytes);
    return withheldBody(app.url, {
      method: 'PUT',
      path: PROFILE,
      headers: { ...bearer(token), 'content-type': 'application/json', 'content-encoding': 'gzip' },
      body,
      withhold: withhold === undefined ? undefined : body.length - withhold,
    });
  };
  const updateProfile = async (token: string, nickname: string, gzip: boolean) => {
    const json = Buffer.from(JSON.stringify({ nickname }));
    const res = await fetch(`${app.url}${PROFILE}`, {
      method: 'PUT',
      headers: {
        ...bearer(token),
        'content-type': 'application/json',
        'x-forwarded-for': '198.51.100.40',
        ...(gzip ? { 'content-encoding': 'gzip' } : {}),
      },
      body: gzip ? gzipSync(json) : json,
    });
    return { status: res.status, body: await res.json() };
  };

  it("a member's withheld gzip bodies hold at most its share: the next is 429 before it is read; others are served", async () => {
    const hoarder = await member('body_hoarder');
    const bystander = await member('body_bystander');
    const held = Array.from({ length: PER_CALLER / LIMIT }, () => withheld(hoarder, LIMIT));
    try {
      // Each body inflated whole but for its trailer: the member's share is full.
      await until(() => budget.inFlight === PER_CALLER);
      const refused = withheld(hoarder, LIMIT, 1024);
      const answer = await refused.answer;
      expect(answer).toMatchObject({
        status: 429,
        headers: { 'retry-after': '1', connection: 'close' },
        body: {
          code: 429,
          message: 'Too many of your request bodies are being received; retry when one is done',
          data: null,
        },
      });
      await refused.closed;
      // Nothing of it was taken: refused before it was read.
      expect(budget.inFlight).toBe(PER_CALLER);
      // Another member is served, compressed or not.
      expect((await updateProfile(bystander, 'Bystander', true)).status).toBe(200);
      expect((await updateProfile(bystander, 'Plain', false)).status).toBe(200);
      // One body let go frees its bytes: the hoarder is served again.
      held[0].close();
      await until(() => budget.inFlight === PER_CALLER - LIMIT);
      const served = await updateProfile(hoarder, 'Hoarder', true);
      expect([served.status, served.body.data.nickname]).toEqual([200, 'Hoarder']);
    } finally {
      held.forEach((h) => h.close());
      await until(() => budget.inFlight === 0);
    }
  });

  it('a body arriving slower than 16 KiB/s on average is cut with 408 once the clock is 10 s past its start', async () => {
    const token = await member('body_trickler');
    const slow = withheld(token, LIMIT, 4096);
    try {
      await until(() => budget.inFlight > 0);
      clock.advance(BODY_RATE_GRACE_MS);
      expect(await slow.answer).toMatchObject({
        status: 408,
        headers: { connection: 'close' },
        body: {
          code: 408,
          message: 'Request body too slow: it must arrive at 16 KiB/s at least; retry on a faster connection',
          data: null,
        },
      });
      await slow.closed;
      expect(budget.inFlight).toBe(0);
      // The member's next body, sent whole, is read as ever.
      expect((await updateProfile(token, 'Fast', true)).status).toBe(200);
    } finally {
      slow.close();
    }
  });
});
