/**
 * Limits and budgets of keys and projects as a client meets them (apps/ai-gateway/src/limits/): OpenAI's
 * x-ratelimit-* headers read by the openai SDK, a 429 it retries after its Retry-After, per-model token
 * limits, a call too large for any minute, budgets that start again at midnight in BUDGET_TIMEZONE, the
 * alert threshold announced once per period, and a project binding its keys together. The gateway's
 * clock is a FakeClock the tests move (no test waits for a minute or a day).
 */
import OpenAI from 'openai';
import * as net from 'net';
import { AUTH_LIMITER, AuthLimiter, Principal } from '@app/auth';
import { CallAdmission } from '../../apps/ai-gateway/src/limits/call-admission';
import { LimitsRepository } from '../../apps/ai-gateway/src/limits/limits.repository';
import { apiKeyPrincipal } from '../../apps/ai-gateway/src/keys/gateway.authenticator';
import { ApiKeysService } from '../../apps/ai-gateway/src/keys/api-keys.service';
import { FakeClock } from '../support/clock';
import { queryRows } from '../support/database';
import { GatewayFixture, startGatewayFixture } from './gateway-fixture';

const NOON_IN_SHANGHAI = Date.parse('2026-11-27T04:00:00Z');

describe('AI gateway limits and budgets (keys, projects, models, periods)', () => {
  let f: GatewayFixture;
  const clock = new FakeClock(NOON_IN_SHANGHAI);

  beforeAll(async () => {
    f = await startGatewayFixture({ BUDGET_TIMEZONE: 'Asia/Shanghai', AI_REFUSAL_HOLD_MS: '1000' }, undefined, {
      clock,
    });
  });
  afterAll(() => f.close());
  beforeEach(() => {
    f.openai.requests.length = 0;
    f.openai.behaviour.reply = undefined;
    f.openai.behaviour.holdAfterChunks = undefined;
    f.openai.behaviour.hold = undefined;
  });

  /** What the SDK got for one HTTP request: status, headers, and an error's body. */
  interface Seen {
    status: number;
    headers: Headers;
    error?: { type: string; code: string; param: string | null; message: string };
  }

  /**
   * The openai SDK on the gateway; `seen` records every HTTP answer it got (retries included). An error's
   * body is read from a clone at once: an unread clone would keep the SDK's cancel of the original pending.
   */
  function sdk(key: string, maxRetries = 0, onAnswer?: (res: Response) => Promise<void>) {
    const seen: Seen[] = [];
    const client = new OpenAI({
      apiKey: key,
      baseURL: `${f.gw.url}/v1`,
      maxRetries,
      fetch: async (url: string | URL | Request, init?: RequestInit) => {
        const res = await fetch(url, init);
        seen.push({
          status: res.status,
          headers: res.headers,
          ...(res.ok ? {} : { error: ((await res.clone().json()) as { error: Seen['error'] }).error }),
        });
        await onAnswer?.(res);
        return res;
      },
    });
    return { client, seen };
  }
  const hi = (max_tokens = 20) => ({
    model: 'vendor-gpt-4',
    max_tokens,
    messages: [{ role: 'user' as const, content: 'hi' }],
  });

  async function createProject(fields: Record<string, unknown>): Promise<string> {
    const res = await f.admin('POST', '/admin/projects', {
      name: `p-${Math.random().toString(36).slice(2, 8)}`,
      ...fields,
    });
    expect(res.status).toBe(201);
    return res.body.id;
  }

  it('answers the x-ratelimit-* headers of requests and tokens, which the openai SDK reads', async () => {
    const { key } = await f.createKey({ requests_per_minute: 10, tokens_per_minute: 5000 });
    const { data, response } = await sdk(key).client.chat.completions.create(hi()).withResponse();
    expect(data.choices[0].message.content).toBeTruthy();
    expect(response.headers.get('x-ratelimit-limit-requests')).toBe('10');
    expect(response.headers.get('x-ratelimit-remaining-requests')).toBe('9');
    expect(response.headers.get('x-ratelimit-limit-tokens')).toBe('5000');
    // The call's reservation (its prompt with a margin, and max_tokens) is counted while it runs.
    const remaining = Number(response.headers.get('x-ratelimit-remaining-tokens'));
    expect(remaining).toBeLessThan(5000 - 20);
    expect(remaining).toBeGreaterThan(5000 - 100);
    expect(response.headers.get('x-ratelimit-reset-tokens')).toMatch(/^(1m[01](\.\d+)?s|60(\.\d+)?s)$/);
  });

  it('refuses a call over max_concurrent_requests with 429 and Retry-After; the openai SDK waits and retries it', async () => {
    const { key } = await f.createKey({ max_concurrent_requests: 1 });
    let release!: () => void;
    f.openai.behaviour.holdAfterChunks = 1;
    f.openai.behaviour.hold = new Promise<void>((r) => (release = r));
    // The first call streams and holds its lease until the test lets it finish.
    const first = await sdk(key).client.chat.completions.create({ ...hi(), stream: true });
    const firstDone = (async () => {
      let text = '';
      for await (const chunk of first) text += chunk.choices[0]?.delta?.content ?? '';
      return text;
    })();
    // The second is refused while the first runs; once refused, the first is let finish, so the SDK's retry fits.
    const { client, seen } = sdk(key, 2, async (res) => {
      if (res.status !== 429) return;
      release();
      await firstDone;
    });
    const second = await client.chat.completions.create(hi());
    expect(second.choices[0].message.content).toBeTruthy();
    expect(seen.map((r) => r.status)).toEqual([429, 200]);
    expect(seen[0].headers.get('retry-after')).toBe('1');
    expect(seen[0].error).toMatchObject({
      type: 'requests',
      code: 'rate_limit_exceeded',
      param: 'max_concurrent_requests',
    });
  });

  it('limits tokens per minute per model: refused naming the model until the minute has passed; a call too large for any minute is not retried', async () => {
    const { key } = await f.createKey({ model_limits: { 'vendor-gpt-4': { tokens_per_minute: 100 } } });
    f.openai.behaviour.reply = 'w '.repeat(40).trim(); // 40 completion tokens
    await sdk(key).client.chat.completions.create(hi(40));
    // Another model of the key is not limited.
    await sdk(key).client.chat.completions.create({ ...hi(40), model: 'vendor-gpt-4-mini' });

    // (maxRetries 0: the SDK would honour a Retry-After under a minute by waiting that long.)
    const { client, seen } = sdk(key);
    const refused: any = await client.chat.completions.create(hi(40)).catch((e) => e);
    expect(refused.status).toBe(429);
    expect(refused.error).toMatchObject({ type: 'tokens', code: 'rate_limit_exceeded', param: 'tokens_per_minute' });
    expect(refused.error.message).toContain('for model vendor-gpt-4 on tokens per min (TPM): Limit 100');
    const retryAfter = Number(seen[0].headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(59);
    expect(retryAfter).toBeLessThanOrEqual(61);

    clock.advance(retryAfter * 1000);
    await expect(sdk(key).client.chat.completions.create(hi(40))).resolves.toBeTruthy();

    // max_tokens alone above the limit: no wait helps, and the SDK does not retry (x-should-retry: false).
    const tooLarge = sdk(key, 2);
    const err: any = await tooLarge.client.chat.completions.create(hi(200)).catch((e) => e);
    expect(err.status).toBe(429);
    expect(err.error.message).toContain('Request too large for API key "test" for model vendor-gpt-4');
    expect(tooLarge.seen).toHaveLength(1);
    expect(tooLarge.seen[0].headers.get('x-should-retry')).toBe('false');
  });

  it('a daily budget is refused with Retry-After until midnight in BUDGET_TIMEZONE, and starts again then', async () => {
    const { id, key } = await f.createKey({ budget_yuan: 0.1, budget_period: 'daily' });
    f.openai.behaviour.reply = 'w '.repeat(20).trim();
    clock.advance(NOON_IN_SHANGHAI + 86_400_000 - clock.now()); // noon of the next day, Shanghai
    await sdk(key).client.chat.completions.create(hi(20));
    const { client, seen } = sdk(key);
    const refused: any = await client.chat.completions.create(hi(20)).catch((e) => e);
    expect(refused.error).toMatchObject({ type: 'insufficient_quota', code: 'insufficient_quota' });
    expect(refused.error.message).toContain('the daily budget of API key "test"');
    expect(seen[0].headers.get('retry-after')).toBe(String(12 * 3600));
    const today = (await f.admin('GET', `/admin/keys/${id}`)).body;
    expect(today.budget_usage).toMatchObject({
      period: 'daily',
      period_start: '2026-11-27T16:00:00.000Z',
      period_end: '2026-11-28T16:00:00.000Z',
      reserved_yuan: 0,
    });
    expect(today.budget_usage.spent_yuan).toBeGreaterThan(0);

    clock.advance(12 * 3600 * 1000);
    await expect(sdk(key).client.chat.completions.create(hi(20))).resolves.toBeTruthy();
    const tomorrow = (await f.admin('GET', `/admin/keys/${id}`)).body;
    expect(tomorrow.budget_usage.period_start).toBe('2026-11-28T16:00:00.000Z');
    expect(tomorrow.spent_yuan).toBeCloseTo(today.budget_usage.spent_yuan + tomorrow.budget_usage.spent_yuan, 8);
  });

  it('announces a budget crossing its alert threshold once per period (ai_budget_events_total)', async () => {
    const { key } = await f.createKey({ budget_tokens: 1000, budget_period: 'weekly', alert_threshold: 0.002 });
    const events = async () => {
      const text = await (await fetch(`${f.gw.url}/actuator/prometheus`)).text();
      return Number(/ai_budget_events_total\{scope="key",event="threshold_reached"\} (\d+)/.exec(text)?.[1] ?? 0);
    };
    const before = await events();
    await sdk(key).client.chat.completions.create(hi());
    await sdk(key).client.chat.completions.create(hi());
    expect(await events()).toBe(before + 1);
    clock.advance(7 * 86_400_000);
    await sdk(key).client.chat.completions.create(hi());
    expect(await events()).toBe(before + 2);
  });

  it('a key over requests_per_minute is refused from memory until its window has room: the same 429 and headers, the shared state not asked; then counted again', async () => {
    const { id, key } = await f.createKey({ requests_per_minute: 2 });
    const store = jest.spyOn(f.gw.app.get(LimitsRepository), 'admit');
    try {
      await sdk(key).client.chat.completions.create(hi());
      await sdk(key).client.chat.completions.create(hi());
      const first = sdk(key);
      const refused: any = await first.client.chat.completions.create(hi()).catch((e) => e);
      expect(refused.status).toBe(429);
      expect(store).toHaveBeenCalledTimes(3);
      const retryAfter = Number(first.seen[0].headers.get('retry-after'));
      expect(retryAfter).toBeGreaterThan(0);

      // Half-way to the retry time: refused alike (error, headers, a shorter Retry-After), no statement,
      // and answered only after AI_REFUSAL_HOLD_MS (1 s) on the clock: a client calling again at once is slowed.
      clock.advance(Math.floor((retryAfter * 1000) / 2));
      const again = sdk(key);
      let answered = false;
      const pending = again.client.chat.completions
        .create(hi())
        .catch((e) => e)
        .finally(() => (answered = true));
      await clock.whenSleeping();
      await new Promise((r) => setImmediate(r));
      expect(answered).toBe(false);
      clock.advance(1000);
      const second: any = await pending;
      expect(second.status).toBe(429);
      const { message, ...rest } = refused.error;
      expect(second.error).toEqual({
        ...rest,
        message: message.replace(/in \d+s\./, `in ${retryAfter - Math.floor(retryAfter / 2) - 1}s.`),
      });
      expect(again.seen[0].headers.get('x-ratelimit-limit-requests')).toBe('2');
      expect(again.seen[0].headers.get('x-ratelimit-remaining-requests')).toBe('0');
      expect(again.seen[0].headers.get('x-ratelimit-reset-requests')).toMatch(/^\d/);
      expect(Number(again.seen[0].headers.get('retry-after'))).toBeLessThanOrEqual(retryAfter);
      expect(store).toHaveBeenCalledTimes(3);

      // A new limit is a different window set: asked of the shared state at once, and it has room.
      expect((await f.admin('PATCH', `/admin/keys/${id}`, { requests_per_minute: 3 })).status).toBe(200);
      await sdk(key).client.chat.completions.create(hi());
      expect(store).toHaveBeenCalledTimes(4);
      const third: any = await sdk(key)
        .client.chat.completions.create(hi())
        .catch((e) => e);
      expect(third.status).toBe(429);
      expect(store).toHaveBeenCalledTimes(5);

      // Once the retry time has passed, the shared state is asked again, and the request fits.
      clock.advance(retryAfter * 1000);
      const { data } = await sdk(key).client.chat.completions.create(hi()).withResponse();
      expect(data.choices[0].message.content).toBeTruthy();
      expect(store).toHaveBeenCalledTimes(6);
    } finally {
      store.mockRestore();
    }
  });

  it('a missing, unknown or revoked key is answered 401 after AI_REFUSAL_HOLD_MS on the clock; an admin refusal at once', async () => {
    const { id, key } = await f.createKey({ name: 'soon-revoked' });
    expect((await f.admin('DELETE', `/admin/keys/${id}`)).status).toBe(200);
    const failed = jest.spyOn(f.gw.app.get<AuthLimiter>(AUTH_LIMITER), 'failed');
    for (const authorization of [undefined, 'Bearer sk-not-a-key', `Bearer ${key}`]) {
      let answered = false;
      const before = failed.mock.calls.length;
      const pending = fetch(`${f.gw.url}/v1/models`, { headers: authorization ? { authorization } : {} }).finally(
        () => (answered = true),
      );
      await clock.whenSleeping();
      await new Promise((r) => setImmediate(r));
      expect([authorization, answered]).toEqual([authorization, false]);
      // Counted against the address before the hold: guesses sent together are blocked by their count.
      expect(failed.mock.calls.length).toBe(before + 1);
      clock.advance(1000);
      const res = await pending;
      expect([authorization, res.status]).toEqual([authorization, 401]);
      await res.arrayBuffer();
    }
    failed.mockRestore();
    // The console's refusals (an expired sign-in it renews) are not held: answered while the clock stands still.
    const admin = await fetch(`${f.gw.url}/admin/keys`, { headers: { authorization: 'Bearer wrong-admin-token' } });
    expect(admin.status).toBe(401);
  });

  it('holds one refusal per connection: a refusal pipelined behind a held one closes the connection', async () => {
    const { port } = new URL(f.gw.url);
    const socket = net.connect(Number(port), '127.0.0.1');
    let text = '';
    socket.on('data', (d) => (text += d.toString('latin1')));
    const closed = new Promise<void>((r) => socket.on('close', () => r()));
    const refused = 'GET /v1/models HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer sk-not-a-key\r\n\r\n';
    socket.write(refused + refused + refused);
    // Closed while the clock stands still: the first refusal's hold never ended, the second closed the connection.
    await closed;
    expect(text).toBe('');
    clock.advance(1000); // ends the first refusal's hold
  });

  it('a project binds its keys together: its requests per minute and token budget count the calls of all of them', async () => {
    const project = await createProject({ requests_per_minute: 3, budget_tokens: 1_000_000 });
    const [one, two] = [await f.createKey({ project_id: project }), await f.createKey({ project_id: project })];
    expect(one.project_id).toBe(project);
    await sdk(one.key).client.chat.completions.create(hi());
    await sdk(two.key).client.chat.completions.create(hi());
    await sdk(one.key).client.chat.completions.create(hi());
    const { client, seen } = sdk(two.key);
    const refused: any = await client.chat.completions.create(hi()).catch((e) => e);
    expect(refused.error).toMatchObject({
      type: 'requests',
      code: 'rate_limit_exceeded',
      param: 'requests_per_minute',
    });
    expect(refused.error.message).toMatch(
      /^Rate limit reached for project "p-\w+" on requests per min \(RPM\): Limit 3\./,
    );
    expect(seen[0].headers.get('x-ratelimit-remaining-requests')).toBe('0');
    const p = (await f.admin('GET', `/admin/projects/${project}`)).body;
    expect(p.budget_usage.spent_tokens).toBeGreaterThan(0);
    expect(p.budget_usage.reserved_tokens).toBe(0);
  });

  describe('holds of running calls', () => {
    const principalOf = async (key: string): Promise<Principal> =>
      apiKeyPrincipal(await f.gw.app.get(ApiKeysService).resolve(key));

    it('a running call renews its hold and leases, so the sweep never frees them under it; once its call is over it stops', async () => {
      const { id, key } = await f.createKey({ max_concurrent_requests: 1, budget_yuan: 5 });
      const admission = f.gw.app.get(CallAdmission);
      const principal = await principalOf(key);
      let running = true;
      const call = (await admission.admit(
        principal,
        { model: 'vendor-gpt-4', yuan: '1', tokens: 10 },
        undefined,
        () => running,
      ))!;
      // Time passes beyond the hold's life (as for a stream longer than AI_BUDGET_HOLD_TTL_MS) ...
      const age = () =>
        queryRows(
          f.gw.dbUrl,
          `UPDATE ai_limit_holds SET expires_at = now() - interval '1 second' WHERE id = $1 RETURNING id`,
          [call.hold],
        );
      await age();
      await queryRows(
        f.gw.dbUrl,
        `UPDATE ai_limit_leases SET expires_at = now() - interval '1 second' WHERE hold_id = $1`,
        [call.hold],
      );
      // ... but the call renewed them: the sweep leaves them, and a second call still meets the lease.
      expect(await admission.renew(call)).toBe(true);
      expect(await admission.sweep()).toBe(0);
      await expect(admission.admit(principal, { model: 'vendor-gpt-4', yuan: '1', tokens: 10 })).rejects.toMatchObject({
        errorCode: 'rate_limit_exceeded',
        param: 'max_concurrent_requests',
      });
      // A call that ended without settling (a fault) stops renewing; its hold then expires and is swept.
      running = false;
      expect(await admission.renew(call)).toBe(false);
      await age();
      expect(await admission.sweep()).toBe(1);
      const [usage] = await queryRows(
        f.gw.dbUrl,
        `SELECT reserved_yuan::text AS reserved FROM ai_budget_usage WHERE subject = $1`,
        [`k:${id}`],
      );
      expect(Number(usage.reserved)).toBe(0);
    });

    it('a budget spent to the last fen refuses free calls too, for the rest of its period; a budget of 0 still admits them', async () => {
      const admission = f.gw.app.get(CallAdmission);
      const spent = await principalOf((await f.createKey({ budget_yuan: 1, budget_period: 'daily' })).key);
      const call = (await admission.admit(spent, { model: 'vendor-gpt-4', yuan: '1', tokens: 10 }))!;
      await admission.settle(call, { yuan: '1', tokens: 10 });
      // Spent = budget: nothing is left, and a call costing nothing is refused as well (ai_limits_admit since
      // 1797050000000-BudgetUsedUp; before, 1 + 0 > 1 was false and it was admitted).
      await expect(admission.admit(spent, { model: 'vendor-gpt-4', yuan: '0', tokens: 0 })).rejects.toMatchObject({
        errorCode: 'insufficient_quota',
      });
      const zero = await principalOf((await f.createKey({ budget_yuan: 0, budget_period: 'daily' })).key);
      const free = await admission.admit(zero, { model: 'vendor-gpt-4', yuan: '0', tokens: 0 });
      expect(free).not.toBeNull();
      await admission.settle(free!, { yuan: '0', tokens: 0 });
    });

    it('settles a call once: a settlement tried again charges nothing twice', async () => {
      const { id, key } = await f.createKey({ tokens_per_minute: 10_000, budget_yuan: 5 });
      const admission = f.gw.app.get(CallAdmission);
      const call = (await admission.admit(await principalOf(key), {
        model: 'vendor-gpt-4',
        yuan: '0.5',
        tokens: 100,
      }))!;
      await admission.settle(call, { yuan: '0.25', tokens: 40 });
      call.settled = false; // as if the first answer was lost and the settlement ran again
      await admission.settle(call, { yuan: '0.25', tokens: 40 });
      const [usage] = await queryRows(
        f.gw.dbUrl,
        `SELECT spent_yuan::text AS spent, reserved_yuan::text AS reserved FROM ai_budget_usage WHERE subject = $1`,
        [`k:${id}`],
      );
      expect([Number(usage.spent), Number(usage.reserved)]).toEqual([0.25, 0]);
      const [window] = await queryRows(
        f.gw.dbUrl,
        `SELECT sum(amount)::text AS amount FROM ai_limit_windows WHERE key = $1`,
        [`tpm:k:${id}`],
      );
      expect(Number(window.amount)).toBe(40);
    });
  });
});
