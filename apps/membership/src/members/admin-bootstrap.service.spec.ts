import { cliContext } from '@app/audit';
import { RunningApp, startMembership } from '../../../../test/support/apps';
import { queryRows } from '../../../../test/support/database';
import { clientFacts } from '../../../../test/membership/client-facts';
import { PasswordHasher } from '../security/password-hasher';
import { SessionsService } from '../sessions/sessions.service';
import { AdminAccountTakenError, AdminBootstrapService } from './admin-bootstrap.service';
import { MembersService } from './members.service';

// The real use case on a real database: the boot bootstrap (ADMIN_ACCOUNT) and the CLI's ensureAdmin.
describe('AdminBootstrapService: the first admin', () => {
  let app: RunningApp;
  let bootstrap: AdminBootstrapService;
  let members: MembersService;
  let seq = 0;
  const operator = cliContext('operator');

  const passwordOk = async (memberId: string, password: string) =>
    (await app.app.get(PasswordHasher).verify((await members.findById(memberId))?.passwordHash, password)).ok;
  const audit = (memberId: string) =>
    queryRows(app.dbUrl, `SELECT actor_kind, actor_id, action FROM audit_log WHERE target_id = $1 ORDER BY id`, [
      memberId,
    ]);
  const signIn = (memberId: string) => app.app.get(SessionsService).start(memberId, 'password', clientFacts());

  beforeAll(async () => {
    app = await startMembership({
      LOG_LEVEL: 'silent',
      ADMIN_ACCOUNT: 'boot_admin',
      ADMIN_PASSWORD: 'boot-password-1',
      MFA_REQUIRED_ROLES: 'viewer,admin',
    });
    bootstrap = app.app.get(AdminBootstrapService);
    members = app.app.get(MembersService);
  });
  afterAll(() => app?.close());

  it('makes the ADMIN_ACCOUNT admin at boot, recorded by the system; booting again changes nothing', async () => {
    const admin = (await members.findByAccount('boot_admin'))!;
    expect(admin).toMatchObject({ nickname: 'boot_admin', roles: ['admin'] });
    expect(await passwordOk(admin.id, 'boot-password-1')).toBe(true);
    const hash = admin.passwordHash;
    await bootstrap.onApplicationBootstrap();
    expect((await members.findById(admin.id))?.passwordHash).toBe(hash);
    expect(await audit(admin.id)).toEqual([{ actor_kind: 'system', actor_id: null, action: 'member.admin_created' }]);
  });

  it('creates a missing admin, recorded with the caller as actor', async () => {
    const made = await bootstrap.ensureAdmin(`cli_admin_${++seq}`, 'cli-password-1', { ctx: operator });
    expect(made).toMatchObject({ created: true, revokedSessions: 0, member: { roles: ['admin'] } });
    expect(await passwordOk(made.member.id, 'cli-password-1')).toBe(true);
    expect(await audit(made.member.id)).toEqual([
      { actor_kind: 'cli', actor_id: 'operator', action: 'member.admin_created' },
    ]);
  });

  it('accepts an existing admin as it is, keeping a changed password and its sessions', async () => {
    const { member } = await bootstrap.ensureAdmin(`cli_admin_${++seq}`, 'old-password-1', { ctx: operator });
    await members.setPassword(member.id, 'changed-password-1');
    await signIn(member.id);
    const again = await bootstrap.ensureAdmin(member.username.toUpperCase(), 'old-password-1', { ctx: operator });
    expect(again).toMatchObject({ created: false, revokedSessions: 0, member: { id: member.id } });
    expect(await passwordOk(member.id, 'changed-password-1')).toBe(true);
    expect(await app.app.get(SessionsService).list(member.id)).toHaveLength(1);
  });

  it("resets an existing admin's password on request, ending every session, recorded with the caller as actor", async () => {
    const { member } = await bootstrap.ensureAdmin(`cli_admin_${++seq}`, 'old-password-1', { ctx: operator });
    const sessions = [await signIn(member.id), await signIn(member.id)];
    const reset = await bootstrap.ensureAdmin(member.username, 'new-password-1', {
      ctx: operator,
      resetPassword: true,
    });
    expect(reset).toMatchObject({ created: false, revokedSessions: 2 });
    expect(await passwordOk(member.id, 'new-password-1')).toBe(true);
    for (const s of sessions)
      expect(await app.app.get(SessionsService).liveness(s!.session.id, member.id)).toMatchObject({ revoked: true });
    expect((await audit(member.id)).map((r) => r.action)).toEqual(['member.admin_created', 'member.password_reset']);
  });

  it('never promotes a member who is not an admin, whether the name is their username (any case) or their phone', async () => {
    const phone = `1350000${String(++seq).padStart(4, '0')}`;
    const taken = await members.create(
      { username: `Taken_${seq}`, password: 'their-password', phone },
      {
        method: 'password',
      },
    );
    for (const account of [taken.username.toLowerCase(), phone])
      for (const resetPassword of [false, true])
        await expect(
          bootstrap.ensureAdmin(account, 'operator-password', { ctx: operator, resetPassword }),
        ).rejects.toEqual(new AdminAccountTakenError(account, taken.id));
    expect(await members.findById(taken.id)).toMatchObject({ roles: [] });
    expect(await passwordOk(taken.id, 'their-password')).toBe(true);
    expect(await audit(taken.id)).toEqual([]);
  });

  it('tells the operator about the second factor when MFA_REQUIRED_ROLES names admin', () => {
    expect(bootstrap.secondFactorNote()).toMatch(
      /admins must use a second factor .*enrol an authenticator app or a passkey/,
    );
  });
});
