// Bodies being read hold memory: a key's share (its project's keys together) holds at most
// BODY_BYTES_PER_CALLER_MAX of withheld gzip bodies in a replica (the next is 429 before it is read), a body
// arriving slower than 16 KiB/s on average is cut with 408 after its first 10 s on the app's clock, and keys
// sending several large image bodies at once are served (body-budget.ts, body-arrival.ts in libs/platform).
import { randomBytes } from 'crypto';
import { gzipSync } from 'zlib';
import { BODY_RATE_GRACE_MS, BodyBudget } from '@app/platform';
import { FakeClock } from '../support/clock';
import { until } from '../support/until';
import { gzippedJson, withheldBody } from '../support/withheld-body';
import { GatewayFixture, startGatewayFixture } from './gateway-fixture';

const CHAT = '/v1/chat/completions';
/** The gateway's defaults: BODY_LIMIT_BYTES and BODY_BYTES_PER_CALLER_MAX. */
const LIMIT = 16 * 1024 * 1024;
const PER_CALLER = 4 * LIMIT;

describe('AI gateway: request bodies being read', () => {
  // REQUEST_TIMEOUT_MS far away: only the body budget and the arrival rate act here.
  const clock = new FakeClock();
  let f: GatewayFixture;
  let budget: BodyBudget;
  beforeAll(async () => {
    f = await startGatewayFixture({ REQUEST_TIMEOUT_MS: '600000' }, undefined, { clock });
    budget = f.gw.app.get(BodyBudget);
  });
  afterAll(() => f?.close());

  /** A chat call whose gzip body of exactly `bytes` inflated bytes is sent but for its last `withhold`. */
  const withheld = (key: string, bytes: number, withhold?: number) => {
    const body = gzippedJson(bytes, 'model');
    return withheldBody(f.gw.url, {
      method: 'POST',
      path: CHAT,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'content-encoding': 'gzip' },
      body,
      withhold: withhold === undefined ? undefined : body.length - withhold,
    });
  };
  /** A chat call carrying an image of `imageBytes` (base64 in a data URL), sent whole, gzipped or not. */
  const chatWithImage = async (key: string, imageBytes: number, gzip: boolean) => {
    const url = `data:image/png;base64,${randomBytes(imageBytes).toString('base64')}`;
    const content = [
      { type: 'text', text: 'What is this?' },
      { type: 'image_url', image_url: { url } },
    ];
    const json = Buffer.from(JSON.stringify({ model: 'vendor-gpt-4', messages: [{ role: 'user', content }] }));
    const res = await fetch(`${f.gw.url}${CHAT}`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${key}`,
        'content-type': 'application/json',
        ...(gzip ? { 'content-encoding': 'gzip' } : {}),
      },
      body: gzip ? gzipSync(json, { level: 1 }) : json,
    });
    return { status: res.status, body: await res.json() };
  };

  it("a project's withheld gzip bodies hold at most its share, whichever of its keys sends them: the next is 429 before it is read; another key is served", async () => {
    const project = (await f.admin('POST', '/admin/projects', { name: 'hoarders' })).body;
    const hoarders = [
      (await f.createKey({ name: 'hoarder-a', project_id: project.id })).key,
      (await f.createKey({ name: 'hoarder-b', project_id: project.id })).key,
    ];
    const other = (await f.createKey({ name: 'bystander' })).key;
    const held = Array.from({ length: PER_CALLER / LIMIT }, (_, i) => withheld(hoarders[i % 2], LIMIT));
    try {
      await until(() => budget.inFlight === PER_CALLER);
      for (const key of hoarders) {
        const refused = withheld(key, LIMIT, 1024);
        const answer = await refused.answer;
        expect(answer).toMatchObject({
          status: 429,
          headers: { 'retry-after': '1', connection: 'close' },
          body: { error: { type: 'rate_limit_exceeded', code: 'rate_limit_exceeded' } },
        });
        await refused.closed;
      }
      // Nothing of them was taken: refused before they were read.
      expect(budget.inFlight).toBe(PER_CALLER);
      const served = await chatWithImage(other, 6 * 1024 * 1024, true);
      expect([served.status, served.body.choices?.[0].message.content]).toEqual([200, 'Echo: What is this?']);
    } finally {
      held.forEach((h) => h.close());
      await until(() => budget.inFlight === 0);
    }
  });

  it('a body arriving slower than 16 KiB/s on average is cut with 408 once the clock is 10 s past its start', async () => {
    const key = (await f.createKey({ name: 'trickler' })).key;
    const slow = withheld(key, LIMIT, 4096);
    try {
      await until(() => budget.inFlight > 0);
      clock.advance(BODY_RATE_GRACE_MS);
      expect(await slow.answer).toMatchObject({ status: 408, headers: { connection: 'close' } });
      await slow.closed;
      expect(budget.inFlight).toBe(0);
    } finally {
      slow.close();
    }
  });

  it('a key sends several large image bodies at once, gzipped or not: all are served', async () => {
    const key = (await f.createKey({ name: 'images' })).key;
    const answers = await Promise.all([
      chatWithImage(key, 9 * 1024 * 1024, true),
      chatWithImage(key, 9 * 1024 * 1024, true),
      chatWithImage(key, 9 * 1024 * 1024, false),
    ]);
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200]);
    expect(budget.inFlight).toBe(0);
  });
});
