import type { AuditContext } from '@app/audit';
import { ErrorCode } from '@app/envelope';
import { RunningApp, startMembership } from '../../../../test/support/apps';
import { queryRows } from '../../../../test/support/database';
import { clientFacts } from '../../../../test/membership/client-facts';
import { MembersService } from '../members/members.service';
import { SessionsService } from '../sessions/sessions.service';
import { DataSource } from 'typeorm';
import { AdminMembersService } from './admin-members.service';
import { COUNT_AHEAD } from './admin-members.repository';

// The real use cases on a real database (test/support/apps.ts), called with plain values and an audit context.
describe('AdminMembersService: the members admin API', () => {
  let app: RunningApp;
  let admins: AdminMembersService;
  let sessions: SessionsService;
  let adminId: string;
  let seq = 0;

  const asAdmin = (requestId = 'spec-admin-request'): AuditContext => ({
    actor: { kind: 'member', id: adminId },
    requestId,
    address: '198.51.100.9',
  });
  const newMember = async (prefix: string) =>
    (await app.app.get(MembersService).create({ username: `${prefix}_${++seq}` }, { method: 'password' })).id;
  const signIn = async (memberId: string) =>
    (await sessions.start(memberId, 'password', clientFacts({ ip: '198.51.100.10' })))!.session.id;
  const audit = (targetId: string) =>
    queryRows(
      app.dbUrl,
      `SELECT actor_kind, actor_id, action, request_id, before, after FROM audit_log WHERE target_id = $1 ORDER BY id`,
      [targetId],
    );

  beforeAll(async () => {
    // A long session-check cache, so the tests see that a change drops it rather than outlives it.
    app = await startMembership({ LOG_LEVEL: 'silent', SESSION_CHECK_CACHE_MS: '10000' });
    admins = app.app.get(AdminMembersService);
    sessions = app.app.get(SessionsService);
    adminId = await newMember('am_admin');
  });
  afterAll(() => app?.close());

  it('lists by a trimmed search term and answers the page it was asked for; a blank term lists everyone', async () => {
    const a = await newMember('am_listed');
    const b = await newMember('am_listed');
    const page = await admins.list('  AM_LISTED_ ', 1, 1);
    expect(page).toMatchObject({ total: 2, offset: 1, limit: 1 });
    expect(page.items.map((m) => m.id)).toEqual([a]);
    const [{ count }] = await queryRows(app.dbUrl, `SELECT count(*)::int AS count FROM members`);
    const everyone = await admins.list('   ');
    expect(everyone).toMatchObject({ total: count, offset: 0, limit: 20 });
    expect(everyone.items[0].id).toBe(b);
  });

  it("counts at most offset + limit + COUNT_AHEAD members for a page's total, whatever the table holds", async () => {
    await queryRows(
      app.dbUrl,
      `INSERT INTO members (username) SELECT 'am_bulk_' || g FROM generate_series(1, ${COUNT_AHEAD + 500}) g`,
    );
    const [{ count }] = await queryRows(app.dbUrl, `SELECT count(*)::int AS count FROM members`);
    const ds = app.app.get(DataSource);
    const spy = jest.spyOn(ds, 'query');
    /** The rows the scans of the page's count statement read (EXPLAIN ANALYZE of the statement the list ran). */
    const countRowsRead = async (): Promise<number> => {
      const [sql, params] = spy.mock.calls.find(([text]) => /count\(\*\)/.test(text))!;
      spy.mockClear();
      const [{ 'QUERY PLAN': plan }] = await queryRows(app.dbUrl, `EXPLAIN (ANALYZE, FORMAT JSON) ${sql}`, params);
      let read = 0;
      const walk = (node: any) => {
        if (/Scan/.test(node['Node Type'])) read += node['Actual Rows'] * node['Actual Loops'];
        (node.Plans ?? []).forEach(walk);
      };
      walk(plan[0].Plan);
      return read;
    };
    try {
      expect(await admins.list(undefined, 0, 20)).toMatchObject({ total: 20 + COUNT_AHEAD, totalCapped: true });
      expect(await countRowsRead()).toBeLessThanOrEqual(20 + COUNT_AHEAD);
      // A search counts the same way (its index scans read the term's matches, as its page's own statement does).
      expect(await admins.list('am_bulk_', 0, 20)).toMatchObject({ total: 20 + COUNT_AHEAD, totalCapped: true });
      // Near the end the count is whole.
      expect(await admins.list(undefined, 1000, 20)).toMatchObject({ total: count, totalCapped: false });
      expect(await admins.list('am_bulk_', 1000, 20)).toMatchObject({ total: COUNT_AHEAD + 500, totalCapped: false });
    } finally {
      spy.mockRestore();
    }
  });

  it('answers NOT_FOUND for an unknown or malformed member id on every read and write, and records nothing', async () => {
    for (const id of ['999999999', 'abc', '1'.repeat(25)]) {
      const calls: (() => Promise<unknown>)[] = [
        () => admins.member(id),
        () => admins.sessionsOf(id),
        () => admins.identitiesOf(id),
        () => admins.factorsOf(id),
        () => admins.setStatus(id, 'disabled', asAdmin()),
        () => admins.setStatus(id, 'active', asAdmin()),
        () => admins.revokeSession(id, '0b6f7c9e-7d0a-4a4e-9a51-5c3f1c2d9e10', asAdmin()),
        () => admins.revokeAllSessions(id, asAdmin()),
        () => admins.resetFactors(id, asAdmin()),
        () => admins.setRole(id, { role: 'viewer' }, asAdmin()),
      ];
      for (const call of calls) await expect(call()).rejects.toMatchObject({ code: ErrorCode.NOT_FOUND });
      expect(await audit(id)).toEqual([]);
    }
  });

  it("disabling ends the member's sessions and this replica's cached live answer at once; again changes nothing", async () => {
    const id = await newMember('am_disabled');
    const sid = await signIn(id);
    // Cached as live (SESSION_CHECK_CACHE_MS): only forgetting it makes the disable visible here at once.
    expect(await sessions.liveness(sid, id)).toMatchObject({ revoked: false, memberStatus: 'active' });

    expect(await admins.setStatus(id, 'disabled', asAdmin('spec-disable'))).toMatchObject({ id, status: 'disabled' });
    expect(await sessions.liveness(sid, id)).toMatchObject({ revoked: true, memberStatus: 'disabled' });
    expect(await admins.sessionsOf(id)).toEqual([]);
    await admins.setStatus(id, 'disabled', asAdmin());
    expect(await admins.setStatus(id, 'active', asAdmin())).toMatchObject({ status: 'active' });
    expect((await audit(id)).map((r) => [r.action, r.actor_id, r.request_id, r.after])).toEqual([
      ['member.disabled', adminId, 'spec-disable', { status: 'disabled', sessionsEnded: 1 }],
      ['member.enabled', adminId, 'spec-admin-request', { status: 'active' }],
    ]);
  });

  it('refuses an admin disabling themself or changing their own role, and changes nothing; enabling themself is allowed', async () => {
    for (const change of [
      () => admins.setStatus(adminId, 'disabled', asAdmin()),
      () => admins.setRole(adminId, { role: 'none' }, asAdmin()),
    ])
      await expect(change()).rejects.toMatchObject({ code: ErrorCode.CONFLICT });
    expect(await admins.member(adminId)).toMatchObject({ status: 'active', roles: [] });
    expect(await admins.setStatus(adminId, 'active', asAdmin())).toMatchObject({ status: 'active' });
    // The same change by the system (not a member) is not a self-change.
    const other = await newMember('am_self');
    expect(
      await admins.setRole(
        other,
        { role: 'viewer' },
        { actor: { kind: 'system', id: null }, requestId: null, address: null },
      ),
    ).toMatchObject({ roles: ['viewer'] });
    expect(await audit(adminId)).toEqual([]);
  });

  it('sets the operator role keeping other roles, shows it at once in the cached live answer, and records only real changes', async () => {
    const id = await newMember('am_role');
    await queryRows(app.dbUrl, `UPDATE members SET roles = '{editor}' WHERE id = $1`, [id]);
    const sid = await signIn(id);
    expect((await sessions.liveness(sid, id))?.roles).toEqual(['editor']);

    expect((await admins.setRole(id, { role: 'admin' }, asAdmin())).roles).toEqual(['editor', 'admin']);
    expect((await sessions.liveness(sid, id))?.roles).toEqual(['editor', 'admin']);
    expect((await admins.setRole(id, { role: 'admin' }, asAdmin())).roles).toEqual(['editor', 'admin']);
    expect((await admins.setRole(id, { role: 'none' }, asAdmin())).roles).toEqual(['editor']);
    expect((await audit(id)).map((r) => [r.action, r.before, r.after])).toEqual([
      ['member.role_changed', { roles: ['editor'] }, { roles: ['editor', 'admin'] }],
      ['member.role_changed', { roles: ['editor', 'admin'] }, { roles: ['editor'] }],
    ]);
  });

  it("ends one live session of the member only: another member's session, an ended one or a malformed id is NOT_FOUND", async () => {
    const id = await newMember('am_sessions');
    const other = await newMember('am_sessions');
    const [first, second] = [await signIn(id), await signIn(id)];
    const theirs = await signIn(other);

    await admins.revokeSession(id, first, asAdmin());
    for (const sessionId of [theirs, first, 'not-a-uuid'])
      await expect(admins.revokeSession(id, sessionId, asAdmin())).rejects.toMatchObject({
        code: ErrorCode.NOT_FOUND,
      });
    expect((await admins.sessionsOf(id)).map((s) => s.id)).toEqual([second]);
    expect((await admins.sessionsOf(other)).map((s) => s.id)).toEqual([theirs]);
    expect(await admins.revokeAllSessions(id, asAdmin())).toEqual({ sessionsEnded: 1 });
    expect(await admins.revokeAllSessions(id, asAdmin())).toEqual({ sessionsEnded: 0 });
    expect((await audit(first)).map((r) => r.action)).toEqual(['session.revoked']);
  });

  it('shows factors without secrets and resets them all, counting only a confirmed app and unused codes as removed', async () => {
    const id = await newMember('am_factors');
    await queryRows(
      app.dbUrl,
      `WITH totp AS (INSERT INTO member_totp (member_id, secret_sealed) VALUES ($1, 'sealed-secret') RETURNING 1),
            passkey AS (INSERT INTO member_passkeys (member_id, credential_id, public_key, device_type, backed_up, name)
                        VALUES ($1, $2, '\\x00', 'multiDevice', true, 'Laptop') RETURNING 1)
       INSERT INTO member_recovery_codes (member_id, code_hash, used_time)
       SELECT $1, md5(i::text), CASE WHEN i = 4 THEN now() END FROM generate_series(1, 4) i`,
      [id, `credential-${id}`],
    );
    const sid = await signIn(id);
    const factors = await admins.factorsOf(id);
    // An enrolment begun but never confirmed is no authenticator app.
    expect(factors).toEqual({
      totp: { enabled: false, createdTime: null },
      passkeys: [expect.objectContaining({ name: 'Laptop', backedUp: true })],
      recoveryCodes: { remaining: 3 },
    });
    expect(JSON.stringify(factors)).not.toContain('sealed-secret');

    expect(await admins.resetFactors(id, asAdmin())).toEqual({ totp: false, passkeys: 1, recoveryCodes: 3 });
    const [left] = await queryRows(
      app.dbUrl,
      `SELECT (SELECT count(*) FROM member_totp WHERE member_id = $1)::int AS totp,
              (SELECT count(*) FROM member_passkeys WHERE member_id = $1)::int AS passkeys,
              (SELECT count(*) FROM member_recovery_codes WHERE member_id = $1)::int AS codes`,
      [id],
    );
    expect(left).toEqual({ totp: 0, passkeys: 0, codes: 0 });
    expect(await sessions.liveness(sid, id)).toMatchObject({ revoked: true });
  });
});
