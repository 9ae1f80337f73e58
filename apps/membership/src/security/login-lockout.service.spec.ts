import { ErrorCode } from '@app/envelope';
import { RunningApp, startMembership } from '../../../../test/support/apps';
import { FakeClock } from '../../../../test/support/clock';
import { queryRows } from '../../../../test/support/database';
import { LoginLockoutService } from './login-lockout.service';

const LOCK_MS = 60_000;

// The real service on the app's shared state and database; locks end by the app's clock, moved here.
describe('LoginLockoutService: sign-in locks', () => {
  const clock = new FakeClock();
  let app: RunningApp;
  let lockout: LoginLockoutService;
  let seq = 0;

  /** A member's lock account (`m:<id>`), the member stored directly: security/ sits below members/. */
  const member = async () => {
    const [{ id }] = await queryRows(app.dbUrl, `INSERT INTO members (username) VALUES ($1) RETURNING id::text AS id`, [
      `lockout_spec_${++seq}`,
    ]);
    return { id: id as string, account: `m:${id}` };
  };
  const fail = async (account: string, ip: string, times = 1) => {
    for (let i = 0; i < times; i++) await lockout.recordFailure(account, ip, `spec-request-${seq}`);
  };
  const locked = (account: string, ip: string) =>
    lockout.assertNotLocked(account, ip).then(
      () => false,
      (e: { code: ErrorCode; extras: { retryAfterSeconds: number } }) => {
        expect(e.code).toBe(ErrorCode.ACCOUNT_LOCKED);
        return e.extras.retryAfterSeconds;
      },
    );
  const locksRecorded = (where: string, params: unknown[]) =>
    queryRows(
      app.dbUrl,
      `SELECT action, target_type, target_id, actor_kind, request_id, address, after->>'scope' AS scope, (after->>'failures')::int AS failures
         FROM audit_log WHERE action LIKE '%.login_locked' AND ${where} ORDER BY id`,
      params,
    );

  beforeAll(async () => {
    app = await startMembership(
      {
        LOG_LEVEL: 'silent',
        LOGIN_MAX_FAILURES: '3',
        LOGIN_ACCOUNT_MAX_FAILURES: '6',
        LOGIN_IP_MAX_FAILURES: '8',
        LOGIN_LOCK_MS: String(LOCK_MS),
      },
      { clock },
    );
    lockout = app.app.get(LoginLockoutService);
  });
  afterAll(() => app?.close());

  it('locks an account from one address after LOGIN_MAX_FAILURES until LOGIN_LOCK_MS has passed, recording its start once', async () => {
    const m = await member();
    await fail(m.account, '198.51.100.1', 2);
    expect(await locked(m.account, '198.51.100.1')).toBe(false);
    await fail(m.account, '198.51.100.1');
    expect(await locked(m.account, '198.51.100.1')).toBe(LOCK_MS / 1000);
    expect(await locked(m.account, '198.51.100.2')).toBe(false);

    clock.advance(LOCK_MS - 1000);
    expect(await locked(m.account, '198.51.100.1')).toBe(1);
    clock.advance(1000);
    expect(await locked(m.account, '198.51.100.1')).toBe(false);
    expect(await locksRecorded('target_id = $1', [m.id])).toEqual([
      {
        action: 'member.login_locked',
        target_type: 'member',
        target_id: m.id,
        actor_kind: 'system',
        request_id: `spec-request-${seq}`,
        address: '198.51.100.1',
        scope: 'account_address',
        failures: 3,
      },
    ]);
    // Counting starts again after a lock.
    await fail(m.account, '198.51.100.1', 2);
    expect(await locked(m.account, '198.51.100.1')).toBe(false);
  });

  it('forgets the failures of an address that then signs in', async () => {
    const m = await member();
    await fail(m.account, '198.51.100.10', 2);
    await lockout.recordSuccess(m.account, '198.51.100.10');
    await fail(m.account, '198.51.100.10', 2);
    expect(await locked(m.account, '198.51.100.10')).toBe(false);
  });

  it('locks an account for every stranger after LOGIN_ACCOUNT_MAX_FAILURES from many addresses, but not for its known origins', async () => {
    const m = await member();
    await lockout.rememberOrigin(m.account, '198.51.100.20');
    for (const n of [21, 22, 23, 24, 25, 26]) await fail(m.account, `198.51.100.${n}`);
    expect(await locked(m.account, '198.51.100.29')).toBe(LOCK_MS / 1000);
    expect(await locked(m.account, '198.51.100.20')).toBe(false);
    // Known origins still get to try while the lock stands, and may fail: that starts no second lock.
    for (const ip of ['198.51.100.17', '198.51.100.18']) await lockout.rememberOrigin(m.account, ip);
    for (const ip of ['198.51.100.17', '198.51.100.18', '198.51.100.20']) await fail(m.account, ip, 2);
    expect(await locked(m.account, '198.51.100.20')).toBe(false);
    expect((await locksRecorded('target_id = $1', [m.id])).map((r) => [r.scope, r.address])).toEqual([
      ['account', '198.51.100.26'],
    ]);
  });

  it('keeps the lock of one account from one address even for a known origin', async () => {
    const m = await member();
    await lockout.recordSuccess(m.account, '198.51.100.30');
    await fail(m.account, '198.51.100.30', 3);
    expect(await locked(m.account, '198.51.100.30')).toBe(LOCK_MS / 1000);
  });

  it('locks an address spraying passwords over LOGIN_IP_MAX_FAILURES accounts, for every account it is no known origin of', async () => {
    const sprayed = await Promise.all([1, 2, 3, 4, 5, 6, 7, 8].map(() => member()));
    const own = await member();
    await lockout.rememberOrigin(own.account, '198.51.100.40');
    for (const m of sprayed) await fail(m.account, '198.51.100.40');
    const fresh = await member();
    expect(await locked(fresh.account, '198.51.100.40')).toBe(LOCK_MS / 1000);
    expect(await locked('u:nobody', '198.51.100.40')).toBe(LOCK_MS / 1000);
    expect(await locked(own.account, '198.51.100.40')).toBe(false);
    expect(await locksRecorded('address = $1', ['198.51.100.40'])).toEqual([
      expect.objectContaining({ action: 'address.login_locked', target_type: 'address', target_id: '198.51.100.40' }),
    ]);
  });

  it('counts the addresses of one IPv6 /64 as one', async () => {
    const m = await member();
    for (const ip of ['2001:db8:5:1::1', '2001:db8:5:1::2', '2001:db8:5:1:ffff::3']) await fail(m.account, ip);
    expect(await locked(m.account, '2001:db8:5:1::99')).toBe(LOCK_MS / 1000);
    expect(await locked(m.account, '2001:db8:5:2::1')).toBe(false);
    expect((await locksRecorded('target_id = $1', [m.id])).map((r) => r.address)).toEqual(['2001:db8:5:1::/64']);
  });

  it('locks a name no member has like any account, recording nobody', async () => {
    await fail('u:no_such_member', '198.51.100.50', 3);
    expect(await locked('u:no_such_member', '198.51.100.50')).toBe(LOCK_MS / 1000);
    expect(await locksRecorded(`address = $1`, ['198.51.100.50'])).toEqual([]);
  });
});
