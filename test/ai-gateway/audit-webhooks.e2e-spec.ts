import { queryRows } from '../support/database';
import { FakeClock } from '../support/clock';
import { startGateway, RunningApp } from '../support/apps';
import { until } from '../support/until';
import { WebhookReceiver } from '../support/webhook-receiver';
import { runKeysCommand } from '../../apps/ai-gateway/src/keys/keys.cli';
import { ADMIN_TOKEN, GatewayFixture, startGatewayFixture } from './gateway-fixture';

const WEBHOOK_ENV = {
  WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32',
  WEBHOOK_POLL_MS: '20',
  WEBHOOK_LEASE_MS: '60000',
  WEBHOOK_TIMEOUT_MS: '5000',
  WEBHOOK_BACKOFF_BASE_MS: '10000',
};

describe('AI gateway: audit log and signed webhooks', () => {
  let f: GatewayFixture;
  let receiver: WebhookReceiver;
  let endpointId: string;
  const clock = new FakeClock();
  const audit = (where: string, params: unknown[] = []) =>
    queryRows(f.gw.dbUrl, `SELECT * FROM ai_audit_log WHERE ${where} ORDER BY id`, params);

  beforeAll(async () => {
    receiver = await new WebhookReceiver().start();
    f = await startGatewayFixture(WEBHOOK_ENV, undefined, { clock });
  });
  afterAll(async () => {
    await f?.close();
    await receiver?.close();
  });

  it('registers an endpoint through the public-address guard; the secret is shown once and stored sealed', async () => {
    expect((await f.admin('POST', '/admin/webhooks', { url: 'http://10.0.0.7/hook' })).body.error).toMatchObject({
      code: 'invalid_value',
      param: 'url',
    });
    expect((await f.admin('POST', '/admin/webhooks', { url: 'ftp://example.com/x' })).status).toBe(400);
    expect(
      (await f.admin('POST', '/admin/webhooks', { url: receiver.url, events: ['no.such'] })).body.error,
    ).toMatchObject({ param: 'events' });
    const created = await f.admin('POST', '/admin/webhooks', {
      url: receiver.url,
      events: ['key.created', 'key.revoked'],
      description: 'tests',
    });
    expect(created.status).toBe(201);
    expect(created.body.secret).toMatch(/^whsec_/);
    endpointId = created.body.id;
    receiver.setSecret(created.body.secret);
    const got = await f.admin('GET', `/admin/webhooks/${endpointId}`);
    expect(got.body).toMatchObject({
      id: endpointId,
      url: receiver.url,
      events: ['key.created', 'key.revoked'],
      enabled: true,
    });
    expect(got.body.secret).toBeUndefined();
    const [row] = await queryRows(f.gw.dbUrl, `SELECT secret_sealed FROM ai_webhook_endpoints WHERE id = $1`, [
      endpointId,
    ]);
    expect(row.secret_sealed).toMatch(/^v1\./);
    expect(row.secret_sealed).not.toContain(created.body.secret.slice(6));
    expect((await f.admin('GET', '/admin/webhooks/00000000-0000-0000-0000-000000000000')).status).toBe(404);
    expect(await audit(`action = 'webhook_endpoint.created' AND target_id = $1`, [endpointId])).toHaveLength(1);
  });

  it('key create, budget change and revoke each leave one audit row by the admin token, and signed events reach the receiver', async () => {
    const key = await f.createKey({ name: 'audited', budget_yuan: 10 });
    await f.admin('PATCH', `/admin/keys/${key.id}`, { budget_yuan: 50 });
    await f.admin('DELETE', `/admin/keys/${key.id}`);
    await f.admin('DELETE', `/admin/keys/${key.id}`); // already revoked: no second row, no second event
    const rows = await audit(`target_id = $1`, [key.id]);
    expect(rows.map((r) => r.action)).toEqual(['key.created', 'key.updated', 'key.revoked']);
    for (const r of rows)
      expect(r).toMatchObject({
        actor_kind: 'admin-token',
        actor_id: null,
        target_type: 'api_key',
        address: '127.0.0.1',
      });
    expect(rows[0].request_id).toBeTruthy();
    // In the API's names and types (ApiKeyResponse), not the entity's.
    expect(rows[1].before).toMatchObject({
      name: 'audited',
      budget_yuan: 10,
      budget_period: 'lifetime',
      requests_per_minute: null,
      revoked_at: null,
    });
    expect(rows[1].after).toMatchObject({ budget_yuan: 50 });
    expect(rows[1].after).not.toHaveProperty('limits');
    expect(rows[2].after.revoked_at).toEqual(expect.stringMatching(/^\d{4}-\d\d-\d\dT/));
    expect(JSON.stringify(rows)).not.toContain(key.key);
    expect(JSON.stringify(rows)).not.toMatch(/key_?hash/i);

    await until(() => receiver.events.some((e) => e.type === 'key.revoked' && e.data.id === key.id));
    expect(receiver.of('key.created').filter((e) => e.data.id === key.id)).toHaveLength(1);
    expect(receiver.of('key.revoked').filter((e) => e.data.id === key.id)).toHaveLength(1);
    expect(receiver.badSignatures).toEqual([]);
    // The receiver has the event before the sender has written its answer down: wait for the delivery's outcome.
    const deliveries = () => f.admin('GET', `/admin/webhooks/${endpointId}/deliveries`);
    await until(async () => (await deliveries()).body.data[0]?.status !== 'pending');
    const log = await deliveries();
    expect(log.body.data[0]).toMatchObject({
      event_type: 'key.revoked',
      status: 'delivered',
      attempts: 1,
      last_status: 204,
    });
  });

  it('a CLI action is recorded with the cli actor', async () => {
    const out = JSON.parse(
      await runKeysCommand(['create', '--name', 'from-cli', '--json'], {
        ...process.env,
        NODE_ENV: 'development',
        DATABASE_URL: f.gw.dbUrl,
        LOG_LEVEL: 'silent',
        AI_PROVIDERS_FILE: '',
      }),
    );
    const rows = await audit(`target_id = $1`, [out.id]);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ action: 'key.created', actor_kind: 'cli', address: null });
  });

  it('projects: create, change of budget and delete are recorded once each', async () => {
    const p = await f.admin('POST', '/admin/projects', { name: 'audited-project', budget_yuan: 5 });
    await f.admin('PATCH', `/admin/projects/${p.body.id}`, { budget_yuan: 6 });
    await f.admin('DELETE', `/admin/projects/${p.body.id}`);
    expect((await audit(`target_id = $1`, [p.body.id])).map((r) => r.action)).toEqual([
      'project.created',
      'project.updated',
      'project.deleted',
    ]);
  });

  it('lists with filters and an opaque cursor, and exports CSV and NDJSON', async () => {
    const page1 = await f.admin('GET', '/admin/audit-log?action=key.*&limit=2');
    expect(page1.status).toBe(200);
    expect(page1.body.data).toHaveLength(2);
    expect(page1.body.next_cursor).toEqual(expect.any(String));
    const page2 = await f.admin('GET', `/admin/audit-log?action=key.*&limit=2&cursor=${page1.body.next_cursor}`);
    const ids = [...page1.body.data, ...page2.body.data].map((e: any) => Number(e.id));
    expect(ids).toEqual([...ids].sort((a, b) => b - a));
    expect(new Set(ids).size).toBe(ids.length);
    expect((await f.admin('GET', '/admin/audit-log?cursor=nonsense')).body.error).toMatchObject({ param: 'cursor' });
    expect((await f.admin('GET', '/admin/audit-log?actor_kind=robot')).status).toBe(400);
    const cli = await f.admin('GET', '/admin/audit-log?actor_kind=cli');
    expect(cli.body.data.every((e: any) => e.actor.kind === 'cli')).toBe(true);

    const all = (await f.admin('GET', '/admin/audit-log?limit=200')).body.data;
    const nd = await fetch(`${f.gw.url}/admin/audit-log/export?format=ndjson`, {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    expect(nd.headers.get('content-type')).toMatch(/application\/x-ndjson/);
    const lines = (await nd.text())
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines).toEqual(all);
    const csv = await fetch(`${f.gw.url}/admin/audit-log/export?format=csv&action=project.*`, {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    const csvLines = (await csv.text()).trim().split('\r\n');
    expect(csvLines[0]).toBe(
      'id,time,actor_kind,actor_id,action,target_type,target_id,request_id,address,before,after',
    );
    expect(csvLines.slice(1).map((l) => l.split(',')[4])).toEqual([
      'project.deleted',
      'project.updated',
      'project.created',
    ]);
    expect(
      (
        await fetch(`${f.gw.url}/admin/audit-log/export?format=xml`, {
          headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
        })
      ).status,
    ).toBe(400);
    expect((await fetch(`${f.gw.url}/admin/audit-log`)).status).toBe(401);
  });

  it('the audit table refuses UPDATE and DELETE outside the retention sweep', async () => {
    await expect(queryRows(f.gw.dbUrl, `UPDATE ai_audit_log SET action = 'x'`)).rejects.toThrow(/append-only/);
    await expect(queryRows(f.gw.dbUrl, `DELETE FROM ai_audit_log`)).rejects.toThrow(/append-only/);
  });

  it('a receiver that fails is retried on the backoff schedule (moved by the clock) and gets the event once it recovers', async () => {
    receiver.mode = 'fail';
    const key = await f.createKey({ name: 'retried' });
    const delivery = async () =>
      (
        await queryRows(
          f.gw.dbUrl,
          `SELECT d.* FROM ai_webhook_deliveries d JOIN ai_webhook_events e ON e.id = d.event_id WHERE e.payload->'data'->>'id' = $1`,
          [key.id],
        )
      )[0];
    for (let attempt = 1; attempt <= 3; attempt++) {
      await until(
        async () =>
          (await delivery())?.last_status === 500 &&
          (await delivery()).attempts === attempt &&
          (await delivery()).lease_token === null,
      );
      const d = await delivery();
      const wait = new Date(d.next_attempt_at).getTime() - new Date(d.last_attempt_at).getTime();
      const full = 10_000 * 2 ** (attempt - 1);
      expect(wait).toBeGreaterThanOrEqual(full / 2);
      expect(wait).toBeLessThanOrEqual(full);
      expect(d.status).toBe('pending');
      clock.advance(wait - 1);
      await new Promise((r) => setTimeout(r, 100)); // several polls at a time before the retry is due
      expect((await delivery()).attempts).toBe(attempt);
      if (attempt === 3) receiver.mode = 'ok';
      clock.advance(1);
    }
    await until(async () => (await delivery()).status === 'delivered');
    expect(receiver.of('key.created').filter((e) => e.data.id === key.id)).toHaveLength(1);
    expect(receiver.requests.get((await delivery()).event_id)).toBe(4);
  });

  it('after the retry window the delivery fails and the endpoint is disabled, recorded by the system actor; enabling and redelivery send it', async () => {
    receiver.mode = 'fail';
    const key = await f.createKey({ name: 'given-up' });
    const delivery = async () =>
      (
        await queryRows(
          f.gw.dbUrl,
          `SELECT d.* FROM ai_webhook_deliveries d JOIN ai_webhook_events e ON e.id = d.event_id WHERE e.payload->'data'->>'id' = $1`,
          [key.id],
        )
      )[0];
    await until(async () => (await delivery())?.attempts === 1 && (await delivery()).lease_token === null);
    clock.advance(25 * 3_600_000);
    await until(async () => (await delivery()).status === 'failed');
    expect((await f.admin('GET', `/admin/webhooks/${endpointId}`)).body).toMatchObject({
      enabled: false,
      disabled_reason: expect.stringContaining('failed'),
    });
    const disabled = await audit(`action = 'webhook_endpoint.disabled' AND target_id = $1`, [endpointId]);
    expect(disabled).toHaveLength(1);
    expect(disabled[0]).toMatchObject({ actor_kind: 'system' });

    receiver.mode = 'ok';
    expect((await f.admin('PATCH', `/admin/webhooks/${endpointId}`, { enabled: true })).body.enabled).toBe(true);
    const d = await delivery();
    const again = await f.admin('POST', `/admin/webhooks/${endpointId}/deliveries/${d.id}/redeliver`);
    expect(again.status).toBe(200);
    await until(async () => (await delivery()).status === 'delivered');
    expect(receiver.of('key.created').filter((e) => e.data.id === key.id)).toHaveLength(1);
    expect((await f.admin('POST', `/admin/webhooks/${endpointId}/deliveries/999999/redeliver`)).status).toBe(404);
    expect(await audit(`action = 'webhook_delivery.redelivered'`)).toHaveLength(1);
  });

  it('a replica killed mid-delivery: another retries after the lease; replicas never send one event at the same time', async () => {
    receiver.mode = 'hang';
    const key = await f.createKey({ name: 'in-flight' });
    await until(() => receiver.holding === 1);
    const b = await startGateway(
      { ...WEBHOOK_ENV, AI_PROVIDERS_FILE: f.providersFile, ADMIN_TOKEN },
      { dbUrl: f.gw.dbUrl, keepDatabase: true, clock },
    );
    let c: RunningApp | undefined;
    try {
      await f.gw.app.close(); // the first replica stops while its delivery is held open
      receiver.mode = 'ok';
      receiver.delayMs = 30;
      await new Promise((r) => setTimeout(r, 200));
      expect(receiver.of('key.created').filter((e) => e.data.id === key.id)).toHaveLength(0); // still leased
      clock.advance(60_001);
      await until(() => receiver.of('key.created').some((e) => e.data.id === key.id));

      c = await startGateway(
        { ...WEBHOOK_ENV, AI_PROVIDERS_FILE: f.providersFile, ADMIN_TOKEN },
        { dbUrl: f.gw.dbUrl, keepDatabase: true, clock },
      );
      const ids: string[] = [];
      for (let i = 0; i < 12; i++) {
        const res = await fetch(`${(i % 2 ? b : c).url}/admin/keys`, {
          method: 'POST',
          headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
          body: JSON.stringify({ name: `burst-${i}` }),
        });
        ids.push((await res.json()).id);
      }
      await until(() => ids.every((id) => receiver.events.some((e) => e.data.id === id)));
      for (const id of ids) expect(receiver.events.filter((e) => e.data.id === id)).toHaveLength(1);
      expect(receiver.maxConcurrentPerId).toBe(1);
      expect(receiver.badSignatures).toEqual([]);
    } finally {
      await c?.close();
      await b.close();
    }
  });
});
