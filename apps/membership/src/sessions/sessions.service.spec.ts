import { ErrorCode } from '@app/envelope';
import { RunningApp, startMembership } from '../../../../test/support/apps';
import { FakeClock } from '../../../../test/support/clock';
import { queryRows } from '../../../../test/support/database';
import { clientFacts } from '../../../../test/membership/client-facts';
import { MembershipConfig } from '../config/membership.config';
import { SessionsService } from './sessions.service';

// The real service on a real database (test/support/apps.ts), called with plain client facts.
describe('SessionsService: start and refresh', () => {
  const clock = new FakeClock();
  let app: RunningApp;
  let sessions: SessionsService;
  let memberId: string;

  beforeAll(async () => {
    app = await startMembership({ LOG_LEVEL: 'silent' }, { clock });
    sessions = app.app.get(SessionsService);
    // Stored directly: sessions/ sits below members/ (apps/membership/src/feature-boundaries.spec.ts).
    [{ id: memberId }] = await queryRows(
      app.dbUrl,
      `INSERT INTO members (username) VALUES ('session_spec') RETURNING id::text AS id`,
    );
  });
  afterAll(() => app?.close());

  it('records the client address and device of a new session, cut to their column sizes', async () => {
    const started = await sessions.start(memberId, 'password', clientFacts({ ip: '198.51.100.4' }), undefined, {
      amr: ['pwd'],
      factorStrength: 0,
    });
    const long = await sessions.start(memberId, 'phone', { ip: 'x'.repeat(80), device: 'd'.repeat(200) });
    const listed = await sessions.list(memberId);
    expect(listed.find((s) => s.id === started?.session.id)).toMatchObject({
      ip: '198.51.100.4',
      deviceName: 'Firefox on Linux',
      loginType: 'password',
      amr: ['pwd'],
    });
    const cut = listed.find((s) => s.id === long?.session.id);
    expect([cut?.ip?.length, cut?.deviceName.length]).toEqual([64, 128]);
  });

  it("opens no session when the verified password hash is no longer the member's", async () => {
    expect(await sessions.start(memberId, 'password', clientFacts(), 'not-the-stored-hash')).toBeNull();
  });

  it('rotates a refresh token once, hands racers the same successor within the grace, and ends the session on a later replay', async () => {
    const started = (await sessions.start(memberId, 'phone', clientFacts()))!;
    const next = await sessions.rotate(started.refreshToken);
    expect(next.session.id).toBe(started.session.id);
    expect(next.refreshToken).not.toBe(started.refreshToken);
    expect((await sessions.rotate(started.refreshToken)).refreshToken).toBe(next.refreshToken);

    clock.advance(app.app.get(MembershipConfig).REFRESH_REUSE_GRACE_MS + 1);
    await expect(sessions.rotate(started.refreshToken)).rejects.toMatchObject({ code: ErrorCode.UNAUTHORIZED });
    expect(await sessions.liveness(started.session.id, memberId)).toMatchObject({ revoked: true });
    await expect(sessions.rotate(next.refreshToken)).rejects.toMatchObject({ code: ErrorCode.UNAUTHORIZED });
  });

  it("forgets a member's cached live answers without walking the cache: a revocation costs the same however many are cached", async () => {
    const started = (await sessions.start(memberId, 'phone', clientFacts()))!;
    expect(await sessions.liveness(started.session.id, memberId)).toMatchObject({ revoked: false });
    // The cache of this replica, as full as other members' sessions make it.
    const live = (sessions as unknown as { live: Map<string, unknown> }).live;
    let walked = 0;
    const iterate = live[Symbol.iterator].bind(live);
    live[Symbol.iterator] = () => {
      walked++;
      return iterate();
    };
    try {
      // A member revoking a made-up session id, again and again.
      for (let i = 0; i < 5; i++) expect(await sessions.revoke(memberId, `made-up-${i}`, 'member')).toBe(false);
      expect(walked).toBe(0);
      // A real revocation still ends the cached answer at once on this replica.
      expect(await sessions.revoke(memberId, started.session.id, 'member')).toBe(true);
      expect(await sessions.liveness(started.session.id, memberId)).toMatchObject({ revoked: true });
    } finally {
      live[Symbol.iterator] = iterate;
    }
  });

  it('refuses an unknown refresh token', async () => {
    await expect(sessions.rotate('not-a-token')).rejects.toMatchObject({ code: ErrorCode.UNAUTHORIZED });
  });
});
