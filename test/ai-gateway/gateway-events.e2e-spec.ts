/**
 * The gateway's own events over real HTTP and PostgreSQL, received by a loopback receiver that verifies
 * every signature with `standardwebhooks`: budget events written by ai_limits_settle in the settlement
 * that crosses the line (once per period), upstream.cooled_down / upstream.recovered once per transition
 * across two replicas, and the audit retention sweep by the app's clock.
 */
import { randomUUID } from 'crypto';
import OpenAI from 'openai';
import { AuditRetentionSweeper } from '@app/audit';
import { LlmRouter } from '@app/llm';
import { FakeClock } from '../support/clock';
import { queryRows } from '../support/database';
import { RunningApp, startGateway } from '../support/apps';
import { until } from '../support/until';
import { WebhookReceiver } from '../support/webhook-receiver';
import { UpstreamEvents } from '../../apps/ai-gateway/src/upstreams/upstream-events';
import { ADMIN_TOKEN, GatewayFixture, startGatewayFixture } from './gateway-fixture';

const WEBHOOK_ENV = {
  WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32',
  WEBHOOK_POLL_MS: '20',
  WEBHOOK_LEASE_MS: '60000',
  WEBHOOK_TIMEOUT_MS: '5000',
};
const NOON_IN_SHANGHAI = Date.parse('2026-11-27T04:00:00Z');

describe('AI gateway: budget and upstream events, audit retention', () => {
  let f: GatewayFixture;
  let second: RunningApp;
  let receiver: WebhookReceiver;
  const clock = new FakeClock(NOON_IN_SHANGHAI);
  const chat = (key: string, gw = f.gw) =>
    new OpenAI({ apiKey: key, baseURL: `${gw.url}/v1`, maxRetries: 0 }).chat.completions.create({
      model: 'vendor-gpt-4',
      max_tokens: 20,
      messages: [{ role: 'user', content: 'hi' }],
    });

  beforeAll(async () => {
    receiver = await new WebhookReceiver().start();
    f = await startGatewayFixture(
      { ...WEBHOOK_ENV, BUDGET_TIMEZONE: 'Asia/Shanghai', AUDIT_RETENTION_DAYS: '30' },
      undefined,
      { clock },
    );
    // A second replica on the same database and providers file: its own router, its own cooldowns.
    second = await startGateway(
      {
        AI_PROVIDERS_FILE: f.providersFile,
        ADMIN_TOKEN,
        RATE_LIMIT_PER_MINUTE: '100000',
        ...WEBHOOK_ENV,
        BUDGET_TIMEZONE: 'Asia/Shanghai',
      },
      { dbUrl: f.gw.dbUrl, keepDatabase: true, clock },
    );
    const created = await f.admin('POST', '/admin/webhooks', { url: receiver.url });
    receiver.setSecret(created.body.secret);
  });
  afterAll(async () => {
    await second?.close();
    await f?.close();
    await receiver?.close();
  });
  afterEach(() => {
    expect(receiver.badSignatures).toEqual([]);
    f.openai.behaviour.failTimes = 0;
  });

  it('a key and its project crossing their alert thresholds: one event each, from the settlement, with the API names; again only in the next period', async () => {
    const project = (
      await f.admin('POST', '/admin/projects', {
        name: 'events-project',
        budget_tokens: 5000,
        budget_period: 'weekly',
        alert_threshold: 0.001,
      })
    ).body;
    expect(project.id).toEqual(expect.any(String));
    const key = await f.createKey({
      name: 'events-key',
      project_id: project.id,
      budget_tokens: 1000,
      budget_period: 'daily',
      alert_threshold: 0.002,
    });
    await chat(key.key);
    await chat(key.key);
    await until(
      () =>
        receiver.of('key.budget.threshold_reached').some((e) => e.data.key_id === key.id) &&
        receiver.of('project.budget.threshold_reached').some((e) => e.data.project_id === project.id),
    );
    const keyEvents = receiver.of('key.budget.threshold_reached').filter((e) => e.data.key_id === key.id);
    expect(keyEvents).toHaveLength(1);
    expect(keyEvents[0].data).toEqual({
      key_id: key.id,
      name: 'events-key',
      period: 'daily',
      period_start: '2026-11-26T16:00:00.000Z',
      period_end: '2026-11-27T16:00:00.000Z',
      budget_yuan: null,
      budget_tokens: 1000,
      alert_threshold: 0.002,
      spent_yuan: expect.any(Number),
      spent_tokens: expect.any(Number),
    });
    expect(keyEvents[0].data.spent_tokens).toBeGreaterThanOrEqual(2);
    expect(keyEvents[0].timestamp).toBe(new Date(clock.now()).toISOString());
    const projectEvents = receiver
      .of('project.budget.threshold_reached')
      .filter((e) => e.data.project_id === project.id);
    expect(projectEvents).toHaveLength(1);
    expect(projectEvents[0].data).toMatchObject({
      project_id: project.id,
      name: 'events-project',
      period: 'weekly',
      budget_tokens: 5000,
    });
    const stored = await queryRows(
      f.gw.dbUrl,
      `SELECT count(*)::int AS n FROM ai_webhook_events WHERE type = 'key.budget.threshold_reached' AND payload->'data'->>'key_id' = $1`,
      [key.id],
    );
    expect(stored[0].n).toBe(1);
    // The next day is a new period of the key's daily budget: announced again.
    clock.advance(86_400_000);
    await chat(key.key);
    await until(() => receiver.of('key.budget.threshold_reached').filter((e) => e.data.key_id === key.id).length === 2);
    expect(
      receiver.of('key.budget.threshold_reached').filter((e) => e.data.key_id === key.id)[1].data.period_start,
    ).toBe('2026-11-27T16:00:00.000Z');
  });

  it('a settlement that spends a budget enqueues key.budget.exhausted in its transaction, once per period', async () => {
    const key = await f.createKey({ name: 'spent-key', budget_yuan: 0.5 });
    const subject = `k:${key.id}`;
    const settle = async (yuan: string) => {
      const hold = randomUUID();
      const budget = {
        key: `b:${subject}:0`,
        name: JSON.stringify(['key', 'spent-key', 'budget', null]),
        subject,
        period: 'lifetime',
        period_start: 0,
        period_end: null,
        budget_yuan: '0.5',
        budget_tokens: null,
        alert_threshold: null,
        seed_key: key.id,
        yuan,
        tokens: 10,
      };
      await queryRows(f.gw.dbUrl, `SELECT ai_limits_admit($1::jsonb)`, [
        JSON.stringify({ now: clock.now(), hold, hold_ttl_ms: 60_000, budgets: [{ ...budget, yuan: '0.01' }] }),
      ]);
      const [row] = await queryRows(f.gw.dbUrl, `SELECT ai_limits_settle($1::jsonb) AS r`, [
        JSON.stringify({ now: clock.now(), hold, budgets: [budget], key_id: key.id, key_yuan: yuan }),
      ]);
      return row.r;
    };
    expect((await settle('0.2')).exhausted).toEqual([]);
    expect((await settle('0.35')).exhausted).toEqual([subject]);
    expect((await settle('0.1')).exhausted).toEqual([]);
    await until(() => receiver.of('key.budget.exhausted').some((e) => e.data.key_id === key.id));
    const events = await queryRows(
      f.gw.dbUrl,
      `SELECT payload FROM ai_webhook_events WHERE type = 'key.budget.exhausted' AND payload->'data'->>'key_id' = $1`,
      [key.id],
    );
    expect(events).toHaveLength(1);
    expect(receiver.of('key.budget.exhausted').find((e) => e.data.key_id === key.id)!.data).toMatchObject({
      name: 'spent-key',
      period: 'lifetime',
      period_start: '1970-01-01T00:00:00.000Z',
      period_end: null,
      budget_yuan: 0.5,
      spent_yuan: 0.55,
      spent_tokens: 20,
    });
  });

  it('upstream.cooled_down and upstream.recovered once per transition across two replicas, naming the episode', async () => {
    const key = await f.createKey({ name: 'cooldown-key' });
    const other = await f.createKey({ name: 'cooldown-key-2' });
    // Every attempt of the four calls fails (three attempts each: providersDoc's routing).
    f.openai.behaviour.failTimes = 12;
    // Both replicas meet the failing deployment and cool it down, each in its own process: one key's
    // failures cool it for that key alone, a second key's make it everyone's (libs/llm/src/router.ts).
    for (const gw of [f.gw, second]) {
      await chat(key.key, gw).catch(() => undefined);
      expect(gw.app.get(LlmRouter).isCoolingDown('primary')).toBe(false);
      await chat(other.key, gw).catch(() => undefined);
    }
    for (const gw of [f.gw, second]) expect(gw.app.get(LlmRouter).isCoolingDown('primary')).toBe(true);
    await Promise.all([f.gw, second].map((gw) => gw.app.get(UpstreamEvents).settled()));
    f.openai.behaviour.failTimes = 0;
    clock.advance(1000);
    for (const gw of [f.gw, second]) await chat(key.key, gw);
    await Promise.all([f.gw, second].map((gw) => gw.app.get(UpstreamEvents).settled()));
    await until(() => receiver.of('upstream.recovered').length > 0 && receiver.of('upstream.cooled_down').length > 0);
    const stored = await queryRows(
      f.gw.dbUrl,
      `SELECT type, payload FROM ai_webhook_events WHERE type LIKE 'upstream.%' ORDER BY created_at, type`,
    );
    expect(stored.map((r) => r.type)).toEqual(['upstream.cooled_down', 'upstream.recovered']);
    const [down] = receiver.of('upstream.cooled_down');
    const [up] = receiver.of('upstream.recovered');
    expect(down.data).toMatchObject({
      deployment: 'primary',
      episode_id: expect.stringMatching(/^ep_/),
      error: { status: 500, kind: 'http' },
    });
    expect(up.data).toEqual({
      deployment: 'primary',
      episode_id: down.data.episode_id,
      cooled_down_at: down.data.cooled_down_at,
      recovered_at: new Date(clock.now()).toISOString(),
    });
    expect(JSON.stringify(stored)).not.toContain('sk-upstream');
  });

  it('the retention sweep drops audit rows older than AUDIT_RETENTION_DAYS by the app clock, and only those', async () => {
    await f.createKey({ name: 'old-row' });
    const [{ n: before }] = await queryRows(f.gw.dbUrl, `SELECT count(*)::int AS n FROM ai_audit_log`);
    expect(before).toBeGreaterThan(0);
    const sweeper = f.gw.app.get(AuditRetentionSweeper);
    expect(await sweeper.sweep()).toBe(0);
    clock.advance(29 * 86_400_000);
    await f.createKey({ name: 'young-row' });
    clock.advance(2 * 86_400_000);
    // Everything but the row written 2 days ago (by the app's clock) is older than 30 days now.
    expect(await sweeper.sweep()).toBe(before);
    const left = await queryRows(f.gw.dbUrl, `SELECT action, after->>'name' AS name FROM ai_audit_log`);
    expect(left).toEqual([{ action: 'key.created', name: 'young-row' }]);
    // The table still refuses a DELETE outside the sweep.
    await expect(queryRows(f.gw.dbUrl, `DELETE FROM ai_audit_log`)).rejects.toThrow();
  });
});
