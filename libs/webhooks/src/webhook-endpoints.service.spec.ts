import { DataSource } from 'typeorm';
import type { AuditContext } from '@app/audit';
import { ErrorCode } from '@app/envelope';
import { RunningApp, startMembership } from '../../../test/support/apps';
import { FakeClock } from '../../../test/support/clock';
import { queryRows } from '../../../test/support/database';
import { WebhookEndpointsService } from './webhook-endpoints.service';
import { WebhookOutbox } from './webhook-outbox';
import { WebhookSecrets } from './webhook-secrets';

const HOOK = 'http://127.0.0.1:9/hook';
const HOUR = 3_600_000;

// The webhook admin use cases of both apps, through membership's app (its events, its envelope errors) on
// a real database. The delivery worker is off, so deliveries stay as the use cases leave them; loopback is
// allowed as a target (WEBHOOK_ALLOWED_CIDRS), any other private address is not.
describe('WebhookEndpointsService: endpoints, their deliveries and redelivery', () => {
  const clock = new FakeClock();
  let app: RunningApp;
  let hooks: WebhookEndpointsService;
  const admin: AuditContext = { actor: { kind: 'member', id: '7' }, requestId: 'spec-hooks', address: '198.51.100.7' };

  const audit = (endpointId: string) =>
    queryRows(app.dbUrl, `SELECT action, actor_id, before, after FROM audit_log WHERE target_id = $1 ORDER BY id`, [
      endpointId,
    ]);
  const endpointCount = async () =>
    (await queryRows(app.dbUrl, `SELECT count(*)::int AS n FROM webhook_endpoints`))[0].n as number;
  /** A member.registered event through the outbox, as a sign-up commits it: one pending delivery per subscribed endpoint. */
  const enqueue = (memberId: string) =>
    app.app
      .get(DataSource)
      .transaction((m) => app.app.get(WebhookOutbox).enqueue(m, 'member.registered', { member_id: memberId }));
  const delivery = async (endpointId: string, eventId: string) =>
    (
      await queryRows(app.dbUrl, `SELECT * FROM webhook_deliveries WHERE endpoint_id = $1 AND event_id = $2`, [
        endpointId,
        eventId,
      ])
    )[0];

  beforeAll(async () => {
    app = await startMembership(
      {
        LOG_LEVEL: 'silent',
        WEBHOOK_WORKER: 'false',
        WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32',
        WEBHOOK_RETRY_HOURS: '24',
      },
      { clock },
    );
    hooks = app.app.get(WebhookEndpointsService);
  });
  afterAll(() => app?.close());

  it('registers an endpoint, answering its secret once and storing it sealed for that endpoint alone', async () => {
    const created = await hooks.create(
      { url: HOOK, events: ['member.disabled', 'member.registered', 'member.disabled'] },
      admin,
    );
    expect(created).toMatchObject({
      url: HOOK,
      description: '',
      events: ['member.disabled', 'member.registered'],
      enabled: true,
      disabled_reason: null,
      secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{32}$/),
    });
    const [{ secret_sealed }] = await queryRows(
      app.dbUrl,
      `SELECT secret_sealed FROM webhook_endpoints WHERE id = $1`,
      [created.id],
    );
    const secrets = app.app.get(WebhookSecrets);
    expect(secrets.open(secret_sealed, created.id)).toBe(created.secret);
    // Sealed with the endpoint id as associated data: copied onto another endpoint it opens to nothing.
    expect(secrets.open(secret_sealed, '00000000-0000-4000-8000-000000000000')).toBeNull();

    const { secret: _secret, ...view } = created;
    expect(await hooks.get(created.id)).toEqual(view);
    expect((await hooks.list()).data).toContainEqual(view);
    const rows = await audit(created.id);
    expect(rows).toEqual([
      {
        action: 'webhook_endpoint.created',
        actor_id: '7',
        before: null,
        after: { url: HOOK, description: '', events: ['member.disabled', 'member.registered'], enabled: true },
      },
    ]);
    expect(JSON.stringify(rows)).not.toContain(created.secret.slice('whsec_'.length));
  });

  it('refuses unknown or no events, a URL with credentials, and a private address, storing nothing', async () => {
    const before = await endpointCount();
    const refusals: [Parameters<WebhookEndpointsService['create']>[0], string, RegExp][] = [
      [{ url: HOOK, events: ['member.registered', 'key.created'] }, 'events', /unknown event key\.created/],
      [{ url: HOOK, events: [] }, 'events', /at least one event/],
      [{ url: 'http://user:pass@127.0.0.1:9/hook' }, 'url', /credentials/],
      [{ url: 'http://10.0.0.7/hook' }, 'url', /public address/],
    ];
    for (const [request, field, message] of refusals)
      await expect(hooks.create(request, admin)).rejects.toMatchObject({
        code: ErrorCode.VALIDATION_FAILED,
        extras: { details: { fields: [{ field, message: expect.stringMatching(message) }] } },
      });
    expect(await endpointCount()).toBe(before);
  });

  it('changes only what it is given, vetting a new URL; null events means all; unknown ids are NOT_FOUND', async () => {
    const { id } = await hooks.create({ url: HOOK, events: ['member.disabled'], description: 'crm' }, admin);
    expect(await hooks.update(id, { events: null }, admin)).toMatchObject({
      url: HOOK,
      description: 'crm',
      events: null,
    });
    await expect(hooks.update(id, { url: 'http://10.0.0.7/hook' }, admin)).rejects.toMatchObject({
      code: ErrorCode.VALIDATION_FAILED,
    });
    expect(await hooks.get(id)).toMatchObject({ url: HOOK, events: null });
    for (const unknown of ['00000000-0000-4000-8000-000000000000', 'not-an-id'])
      await expect(hooks.update(unknown, { description: 'x' }, admin)).rejects.toMatchObject({
        code: ErrorCode.NOT_FOUND,
        message: 'No such webhook endpoint',
      });
    expect((await audit(id)).map((r) => [r.action, r.before?.events, r.after?.events])).toEqual([
      ['webhook_endpoint.created', undefined, ['member.disabled']],
      ['webhook_endpoint.updated', ['member.disabled'], null],
    ]);
  });

  it('enabling an endpoint again resumes its pending deliveries now, with a fresh retry window from the app clock', async () => {
    const { id } = await hooks.create({ url: HOOK, events: ['member.registered'] }, admin);
    const eventId = (await enqueue('501'))!;
    await hooks.update(id, { enabled: false }, admin);
    // As the delivery worker leaves an endpoint it gave up on: disabled with a reason, its retry window spent.
    await queryRows(
      app.dbUrl,
      `UPDATE webhook_endpoints SET disabled_reason = 'deliveries failed for 24 hours' WHERE id = $1`,
      [id],
    );
    await queryRows(app.dbUrl, `UPDATE webhook_deliveries SET next_attempt_at = $2, give_up_at = $3 WHERE id = $1`, [
      (await delivery(id, eventId)).id,
      // A retry the backoff put later than the endpoint comes back: it is brought forward to now.
      new Date(clock.now() + 5 * HOUR),
      new Date(clock.now()),
    ]);
    clock.advance(2 * HOUR);

    expect(await hooks.update(id, { enabled: true }, admin)).toMatchObject({ enabled: true, disabled_reason: null });
    const resumed = await delivery(id, eventId);
    expect([resumed.status, resumed.next_attempt_at, resumed.give_up_at]).toEqual([
      'pending',
      new Date(clock.now()),
      new Date(clock.now() + 24 * HOUR),
    ]);
  });

  it("lists an endpoint's deliveries newest first, page by page, with the event they carry", async () => {
    const { id } = await hooks.create({ url: HOOK, events: ['member.registered'] }, admin);
    const events = [await enqueue('601'), await enqueue('602'), await enqueue('603')];
    const first = await hooks.deliveries(id, undefined, 2);
    expect(first.data.map((d) => d.event_id)).toEqual([events[2], events[1]]);
    expect(first.data[0]).toMatchObject({
      event_type: 'member.registered',
      status: 'pending',
      attempts: 0,
      next_attempt_at: new Date(clock.now()).toISOString(),
      payload: { type: 'member.registered', data: { member_id: '603' } },
    });
    const second = await hooks.deliveries(id, first.next_cursor!, 2);
    expect(second).toEqual({ data: [expect.objectContaining({ event_id: events[0] })], next_cursor: null });
    await expect(hooks.deliveries('00000000-0000-4000-8000-000000000000', undefined, 2)).rejects.toMatchObject({
      code: ErrorCode.NOT_FOUND,
    });
  });

  it('redelivers a delivery of the endpoint now, with a fresh retry window; one of another endpoint or none is NOT_FOUND', async () => {
    const mine = await hooks.create({ url: HOOK, events: ['member.registered'] }, admin);
    const theirs = await hooks.create({ url: HOOK, events: ['member.registered'] }, admin);
    const eventId = (await enqueue('701'))!;
    const failed = await delivery(mine.id, eventId);
    await queryRows(
      app.dbUrl,
      `UPDATE webhook_deliveries SET status = 'failed', attempts = 9, last_status = 500, lease_until = now(), lease_token = gen_random_uuid() WHERE id = $1`,
      [failed.id],
    );
    clock.advance(HOUR);

    expect(await hooks.redeliver(mine.id, String(failed.id), admin)).toMatchObject({
      id: String(failed.id),
      status: 'pending',
      next_attempt_at: new Date(clock.now()).toISOString(),
    });
    expect(await delivery(mine.id, eventId)).toMatchObject({
      attempts: 9,
      give_up_at: new Date(clock.now() + 24 * HOUR),
      lease_until: null,
      lease_token: null,
    });
    expect((await audit(mine.id)).at(-1)).toMatchObject({
      action: 'webhook_delivery.redelivered',
      after: { delivery_id: String(failed.id), event_id: eventId },
    });
    for (const deliveryId of [String((await delivery(theirs.id, eventId)).id), '999999999', '0', 'abc'])
      await expect(hooks.redeliver(mine.id, deliveryId, admin)).rejects.toMatchObject({
        code: ErrorCode.NOT_FOUND,
        message: 'No such delivery for this webhook endpoint',
      });
  });

  it('deletes an endpoint once, recording what it was; then, or for a malformed id, NOT_FOUND', async () => {
    const { id } = await hooks.create({ url: HOOK, description: 'old' }, admin);
    expect(await hooks.delete(id, admin)).toEqual({ id, deleted: true });
    for (const gone of [id, 'not-an-id'])
      await expect(hooks.delete(gone, admin)).rejects.toMatchObject({ code: ErrorCode.NOT_FOUND });
    await expect(hooks.get(id)).rejects.toMatchObject({ code: ErrorCode.NOT_FOUND });
    expect((await audit(id)).at(-1)).toMatchObject({
      action: 'webhook_endpoint.deleted',
      before: { url: HOOK, description: 'old', events: null, enabled: true },
    });
  });
});
