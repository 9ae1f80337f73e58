import { DataSource } from 'typeorm';
import type { AuditContext } from '@app/audit';
import { ErrorCode } from '@app/envelope';
import { RunningApp, startMembership } from '../../../test/support/apps';
import { FakeClock } from '../../../test/support/clock';
import { until } from '../../../test/support/until';
import { queryRows, sqlClient } from '../../../test/support/database';
import { WebhookReceiver } from '../../../test/support/webhook-receiver';
import { WebhookDeliveriesRepository } from './webhook-deliveries.repository';
import { WebhookDeliveryWorker } from './webhook-delivery.worker';
import { WebhookEndpointsService } from './webhook-endpoints.service';
import { WebhookOutbox } from './webhook-outbox';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
/** An endpoint whose deliveries these tests claim but never send. */
const NOWHERE = 'http://127.0.0.1:9/hook';

// The delivery worker of both apps (libs/webhooks), through membership's app on a real database: the worker's
// own timers are off (WEBHOOK_WORKER=false), so each test runs its passes (tick) and sweeps itself, at the
// times it sets on the app clock. Receivers are real HTTP servers on loopback (WEBHOOK_ALLOWED_CIDRS).
describe('WebhookDeliveryWorker: retention sweep, disabled endpoints, shared batches', () => {
  const clock = new FakeClock();
  let app: RunningApp;
  let hooks: WebhookEndpointsService;
  let worker: WebhookDeliveryWorker;
  let deliveries: WebhookDeliveriesRepository;
  const receivers: WebhookReceiver[] = [];
  const admin: AuditContext = { actor: { kind: 'member', id: '7' }, requestId: 'spec-worker', address: '198.51.100.7' };

  const receiver = async (mode: WebhookReceiver['mode'] = 'ok') => {
    const r = await new WebhookReceiver().start();
    r.mode = mode;
    receivers.push(r);
    return r;
  };
  /** An endpoint subscribed to `events`, sending to `to` (which verifies its signatures) or nowhere. */
  const endpoint = async (events: string[], to?: WebhookReceiver) => {
    const created = await hooks.create({ url: to?.url ?? NOWHERE, events }, admin);
    to?.setSecret(created.secret);
    return created.id;
  };
  const enqueue = async (type: string, n = 1) => {
    const ids: string[] = [];
    for (let i = 0; i < n; i++)
      ids.push(
        (await app.app
          .get(DataSource)
          .transaction((m) => app.app.get(WebhookOutbox).enqueue(m, type, { member_id: String(i) })))!,
      );
    return ids;
  };
  const delivery = async (endpointId: string, eventId: string) =>
    (
      await queryRows(app.dbUrl, `SELECT * FROM webhook_deliveries WHERE endpoint_id = $1 AND event_id = $2`, [
        endpointId,
        eventId,
      ])
    )[0];
  const eventsLeft = async (ids: string[]) =>
    (await queryRows(app.dbUrl, `SELECT id FROM webhook_events WHERE id = ANY($1) ORDER BY id`, [ids])).map(
      (r) => r.id as string,
    );
  /** Backends of the test database waiting for a lock another holds. */
  const lockWaiters = async () =>
    (
      await queryRows(
        app.dbUrl,
        `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
      )
    )[0].n as number;
  /** Moves the app clock to `at`. */
  const setClock = (at: number) => clock.advance(at - clock.now());

  beforeAll(async () => {
    app = await startMembership(
      {
        LOG_LEVEL: 'silent',
        WEBHOOK_WORKER: 'false',
        WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32',
        WEBHOOK_RETRY_HOURS: '24',
        WEBHOOK_RETENTION_DAYS: '7',
        // The longest allowed: no attempt times out during a test (a held request ends when its test releases it).
        WEBHOOK_TIMEOUT_MS: '60000',
        WEBHOOK_LEASE_MS: '120000',
      },
      { clock },
    );
    hooks = app.app.get(WebhookEndpointsService);
    worker = app.app.get(WebhookDeliveryWorker);
    deliveries = app.app.get(WebhookDeliveriesRepository);
  });
  // Each test starts from an empty outbox: a claim or a sweep sees only what the test made.
  beforeEach(async () => {
    await queryRows(app.dbUrl, `DELETE FROM webhook_endpoints`);
    await queryRows(app.dbUrl, `DELETE FROM webhook_events`);
  });
  afterAll(async () => {
    await app?.close();
    for (const r of receivers) await r.close();
  });

  it('sweeps events whose deliveries all finished more than WEBHOOK_RETENTION_DAYS ago by the app clock, keeping pending ones', async () => {
    const ok = await receiver();
    const down = await receiver('fail');
    const done = await endpoint(['member.registered'], ok);
    const failing = await endpoint(['member.disabled'], down);
    const t0 = clock.now();
    const deliveredEvents = await enqueue('member.registered', 3);
    const [failedEvent] = await enqueue('member.disabled');
    await worker.tick();
    expect(ok.events.map((e) => e.id).sort()).toEqual([...deliveredEvents].sort());
    const deliveredIds = await Promise.all(deliveredEvents.map(async (e) => (await delivery(done, e)).id));
    expect(
      await queryRows(app.dbUrl, `SELECT * FROM webhook_attempts WHERE delivery_id = ANY($1)`, [deliveredIds]),
    ).toHaveLength(3);

    clock.advance(25 * HOUR); // past the retry window: the failing delivery fails for good at t0 + 25 h
    await worker.tick();
    expect(await delivery(failing, failedEvent)).toMatchObject({ status: 'failed', attempts: 2 });
    // Still pending at the sweeps below: created at t0 + 25 h, and never attempted (no pass runs after this).
    const idle = await endpoint(['member.login_locked']);
    const [pendingEvent] = await enqueue('member.login_locked');
    const all = [...deliveredEvents, failedEvent, pendingEvent];

    setClock(t0 + 7 * DAY - 1); // the delivered ones finished exactly 7 days ago, less a millisecond
    expect(await worker.sweep()).toBe(0);
    expect(await eventsLeft(all)).toEqual([...all].sort());

    clock.advance(2);
    expect(await worker.sweep()).toBe(3);
    expect(await eventsLeft(all)).toEqual([failedEvent, pendingEvent].sort());
    // Their deliveries and attempts went with them.
    expect(await queryRows(app.dbUrl, `SELECT id FROM webhook_deliveries WHERE id = ANY($1)`, [deliveredIds])).toEqual(
      [],
    );
    expect(
      await queryRows(app.dbUrl, `SELECT id FROM webhook_attempts WHERE delivery_id = ANY($1)`, [deliveredIds]),
    ).toEqual([]);

    clock.advance(25 * HOUR); // 7 days after the failure
    expect(await worker.sweep()).toBe(1);
    expect(await eventsLeft(all)).toEqual([pendingEvent]);
    expect(await delivery(idle, pendingEvent)).toMatchObject({ status: 'pending' });
  });

  it('sweeps a backlog in batches until none is left', async () => {
    const ok = await receiver();
    await endpoint(['member.registered'], ok);
    const events = await enqueue('member.registered', 5);
    await worker.tick();
    clock.advance(8 * DAY);
    expect(await deliveries.sweep(new Date(clock.now() - 7 * DAY), 2)).toBe(5);
    expect(await eventsLeft(events)).toEqual([]);
  });

  it('sweeps past the events it must keep, in as many statements as the events take, however many come first', async () => {
    await endpoint(['member.disabled']); // never delivered: its events stay pending
    const kept = await enqueue('member.disabled', 5);
    clock.advance(1000);
    await endpoint(['member.registered'], await receiver());
    const done = await enqueue('member.registered', 5);
    // Delivers the second endpoint's five (the first's fail and are retried later).
    await worker.tick();
    clock.advance(8 * DAY);
    const statements = jest.spyOn(app.app.get(DataSource), 'query');
    try {
      expect(await deliveries.sweep(new Date(clock.now() - 7 * DAY), 2)).toBe(5);
      // Ten events two a statement: five statements and the empty one that ends the sweep, and the pausing one.
      expect(statements.mock.calls.length).toBeLessThanOrEqual(7);
    } finally {
      statements.mockRestore();
    }
    expect(await eventsLeft(done)).toEqual([]);
    expect(await eventsLeft(kept)).toEqual([...kept].sort());
  });

  it('a redelivery committed while the sweep deletes its event keeps the event, and is sent', async () => {
    const ok = await receiver();
    const id = await endpoint(['member.registered'], ok);
    const [event] = await enqueue('member.registered');
    await worker.tick();
    const d = await delivery(id, event);
    expect(d).toMatchObject({ status: 'delivered' });
    clock.advance(8 * DAY);
    // The redelivery's transaction is held open after its update: its audit row waits for this lock.
    const holder = await sqlClient(app.dbUrl);
    try {
      await holder.query('BEGIN');
      await holder.query('LOCK TABLE audit_log IN SHARE MODE');
      const redelivery = hooks.redeliver(id, String(d.id), admin);
      await until(async () => (await lockWaiters()) === 1);
      // The sweep runs meanwhile: it either leaves the event at once, or waits for the redelivery's row.
      let ended = false;
      const sweep = deliveries.sweep(new Date(clock.now() - 7 * DAY)).finally(() => (ended = true));
      await until(async () => ended || (await lockWaiters()) === 2);
      await holder.query('COMMIT');
      expect(await redelivery).toMatchObject({ status: 'pending' });
      expect(await sweep).toBe(0);
    } finally {
      await holder.end();
    }
    expect(await eventsLeft([event])).toEqual([event]);
    await worker.tick();
    expect(ok.requests.get(event)).toBe(2);
    expect(await delivery(id, event)).toMatchObject({ status: 'delivered', attempts: 2 });
  });

  it('a redelivery asked for while the sweep deletes its event waits for it, and is NOT_FOUND', async () => {
    const id = await endpoint(['member.registered'], await receiver());
    const [event] = await enqueue('member.registered');
    await worker.tick();
    const d = await delivery(id, event);
    clock.advance(8 * DAY);
    // The sweep is held half-way through its delete: removing the delivery's attempt waits for this lock.
    const holder = await sqlClient(app.dbUrl);
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT id FROM webhook_attempts WHERE delivery_id = $1 FOR UPDATE', [d.id]);
      const sweep = deliveries.sweep(new Date(clock.now() - 7 * DAY));
      await until(async () => (await lockWaiters()) === 1);
      const redelivery = hooks.redeliver(id, String(d.id), admin).catch((e: unknown) => e);
      await until(async () => (await lockWaiters()) === 2);
      await holder.query('COMMIT');
      expect(await sweep).toBe(1);
      expect(await redelivery).toMatchObject({ code: ErrorCode.NOT_FOUND });
    } finally {
      await holder.end();
    }
    expect(await eventsLeft([event])).toEqual([]);
    expect(
      await queryRows(
        app.dbUrl,
        `SELECT id FROM audit_log WHERE action = 'webhook_delivery.redelivered' AND target_id = $1`,
        [id],
      ),
    ).toEqual([]);
  });

  it("a disabled endpoint's pending deliveries leave the due set: never claimed or sent, held until it is enabled again", async () => {
    const a = await receiver();
    const b = await receiver();
    const disabled = await endpoint(['member.registered'], a);
    const enabled = await endpoint(['member.registered'], b);
    const [event] = await enqueue('member.registered');
    await hooks.update(disabled, { enabled: false }, admin);

    expect(await delivery(disabled, event)).toMatchObject({ status: 'paused' });
    expect(
      await queryRows(app.dbUrl, `SELECT id FROM webhook_deliveries WHERE endpoint_id = $1 AND status = 'pending'`, [
        disabled,
      ]),
    ).toEqual([]);
    // A redelivery asked for meanwhile waits for the endpoint too.
    const held = await hooks.redeliver(disabled, String((await delivery(disabled, event)).id), admin);
    expect(held).toMatchObject({ status: 'paused', next_attempt_at: null });

    await worker.tick();
    expect(b.requests.get(event)).toBe(1);
    expect(a.requests.get(event)).toBeUndefined();
    expect(await deliveries.claim(new Date(clock.now()), 60_000, 10)).toEqual([]);
    expect(await delivery(disabled, event)).toMatchObject({ status: 'paused', attempts: 0 });
    expect(await delivery(enabled, event)).toMatchObject({ status: 'delivered' });

    await hooks.update(disabled, { enabled: true }, admin);
    expect(await delivery(disabled, event)).toMatchObject({ status: 'pending' });
    await worker.tick();
    expect(a.events.map((e) => e.id)).toEqual([event]);
    expect(await delivery(disabled, event)).toMatchObject({ status: 'delivered', attempts: 1 });
  });

  it('an endpoint enabled or disabled by a plain UPDATE of its flag (a replica from before paused deliveries) resumes or pauses its deliveries', async () => {
    const r = await receiver();
    const id = await endpoint(['member.registered'], r);
    const [event] = await enqueue('member.registered');
    await hooks.update(id, { enabled: false }, admin);
    expect(await delivery(id, event)).toMatchObject({ status: 'paused' });
    // All a replica from before migration 1796950000000 knows of enabling (then it restarts the retry window of
    // the endpoint's pending deliveries, which are these now).
    await queryRows(app.dbUrl, `UPDATE webhook_endpoints SET enabled = true, disabled_reason = NULL WHERE id = $1`, [
      id,
    ]);
    expect(await delivery(id, event)).toMatchObject({ status: 'pending' });
    await worker.tick();
    expect(r.events.map((e) => e.id)).toEqual([event]);
    expect(await delivery(id, event)).toMatchObject({ status: 'delivered', attempts: 1 });

    const [later] = await enqueue('member.registered');
    await queryRows(app.dbUrl, `UPDATE webhook_endpoints SET enabled = false WHERE id = $1`, [id]);
    expect(await delivery(id, later)).toMatchObject({ status: 'paused' });
    expect(await delivery(id, event)).toMatchObject({ status: 'delivered' });
  });

  it('when the worker gives up on an endpoint, its other pending deliveries are paused with it (and swept as they age)', async () => {
    const down = await receiver('fail');
    const failing = await endpoint(['member.registered'], down);
    const t0 = clock.now();
    // Three of them give up in one batch: each disables the endpoint and pauses the rest, in turn.
    const [first, ...alsoFirst] = await enqueue('member.registered', 3);
    await worker.tick();
    clock.advance(23 * HOUR);
    const [second] = await enqueue('member.registered'); // its own retry window runs to t0 + 47 h
    clock.advance(2 * HOUR);
    await worker.tick(); // all four attempted: the first three are past their window, the endpoint is disabled

    expect(await hooks.get(failing)).toMatchObject({ enabled: false });
    for (const e of [first, ...alsoFirst])
      expect(await delivery(failing, e)).toMatchObject({ status: 'failed', attempts: 2, lease_token: null });
    expect(
      await queryRows(
        app.dbUrl,
        `SELECT id FROM audit_log WHERE action = 'webhook_endpoint.disabled' AND target_id = $1`,
        [failing],
      ),
    ).toHaveLength(1);
    expect(await delivery(failing, second)).toMatchObject({ status: 'paused', attempts: 1 });
    expect(await deliveries.claim(new Date(clock.now() + 2 * HOUR), 60_000, 10)).toEqual([]);
    expect(down.requests.get(second)).toBe(1);

    setClock(t0 + 26 * HOUR + 7 * DAY); // 7 days after the last attempt and the retry it had scheduled
    expect(await worker.sweep()).toBe(4);
    expect(await eventsLeft([first, ...alsoFirst, second])).toEqual([]);
  });

  it('a claim shares the batch out between endpoints: one with a backlog takes its share while others have deliveries due', async () => {
    const busy = await endpoint(['member.registered']);
    const quiet = await endpoint(['member.disabled']);
    const quieter = await endpoint(['member.login_locked']);
    await enqueue('member.registered', 30); // the oldest due deliveries are all the busy endpoint's
    clock.advance(1000);
    await enqueue('member.disabled', 3);
    await enqueue('member.login_locked', 2);
    const perEndpoint = (batch: Array<{ endpoint_id: string }>) =>
      [busy, quiet, quieter].map((id) => batch.filter((d) => d.endpoint_id === id).length);

    const now = new Date(clock.now());
    expect(perEndpoint(await deliveries.claim(now, 60_000, 10))).toEqual([5, 3, 2]);
    // Nobody else has one due: the busy endpoint gets the whole batch, oldest first.
    const next = await deliveries.claim(now, 60_000, 10);
    expect(perEndpoint(next)).toEqual([10, 0, 0]);
    expect(await deliveries.claim(now, 60_000, 100)).toHaveLength(15);
  });

  it("a slow endpoint's attempts hold their own slots, not the pass: others' deliveries go on meanwhile", async () => {
    const slow = await receiver('hang');
    const fast = await receiver();
    await endpoint(['member.registered'], slow);
    await endpoint(['member.disabled'], fast);
    await enqueue('member.registered', 30); // the oldest due deliveries are all the slow endpoint's
    clock.advance(1000);
    await enqueue('member.disabled', 20);
    const pass = worker.tick();
    // All twenty of the fast endpoint's deliveries arrive while the slow one holds half of the worker's slots.
    await until(() => fast.of('member.disabled').length === 20);
    expect(slow.holding).toBe(5);
    // Deliveries that fall due while the slow ones hang are claimed at the next poll, not after them.
    await enqueue('member.disabled', 3);
    await until(() => fast.of('member.disabled').length === 23);
    expect(slow.holding).toBe(5);
    // The slow endpoint goes away: its held attempts end (failed, retried later) and the pass is over.
    await slow.close();
    await pass;
    expect(fast.of('member.disabled')).toHaveLength(23);
  });
});
