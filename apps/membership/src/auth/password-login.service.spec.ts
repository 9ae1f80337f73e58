import { ErrorCode } from '@app/envelope';
import { RunningApp, startMembership } from '../../../../test/support/apps';
import { queryRows } from '../../../../test/support/database';
import { clientFacts } from '../../../../test/membership/client-facts';
import { SessionsService } from '../sessions/sessions.service';
import { MemberLoginResponse } from './dtos/member-login.dto';
import { PasswordLoginService } from './password-login.service';

// The real use case on a real database (test/support/apps.ts), called with plain client facts.
describe('PasswordLoginService: login with account and password', () => {
  let app: RunningApp;
  let logins: PasswordLoginService;
  const password = 'correct horse battery';

  beforeAll(async () => {
    app = await startMembership({ LOG_LEVEL: 'silent', LOGIN_MAX_FAILURES: '3' });
    logins = app.app.get(PasswordLoginService);
  });
  afterAll(() => app?.close());

  it('answers the login result and opens a session recording the client address and device', async () => {
    const member = await logins.register({ username: 'pw_spec_a', password });
    const result = (await logins.loginWithPassword(
      { account: 'pw_spec_a', password },
      clientFacts({ ip: '198.51.100.20' }),
    )) as MemberLoginResponse;
    expect(result).toMatchObject({ memberId: member.memberId, username: 'pw_spec_a', tokenType: 'Bearer' });
    expect(result.token).toEqual(expect.any(String));
    const [session] = await app.app.get(SessionsService).list(member.memberId);
    expect(session).toMatchObject({
      ip: '198.51.100.20',
      deviceName: 'Firefox on Linux',
      loginType: 'password',
      amr: ['pwd'],
    });
  });

  it('locks the account from an address after LOGIN_MAX_FAILURES wrong passwords, recording the lock with the request id; another address still logs in', async () => {
    const member = await logins.register({ username: 'pw_spec_b', password });
    const there = clientFacts({ ip: '198.51.100.30', requestId: 'spec-lock-request' });
    for (let i = 0; i < 3; i++) {
      await expect(
        logins.loginWithPassword({ account: 'pw_spec_b', password: 'wrong password' }, there),
      ).rejects.toMatchObject({ code: ErrorCode.BAD_CREDENTIALS });
    }
    await expect(logins.loginWithPassword({ account: 'pw_spec_b', password }, there)).rejects.toMatchObject({
      code: ErrorCode.ACCOUNT_LOCKED,
    });
    const rows = await queryRows(
      app.dbUrl,
      `SELECT request_id, address FROM audit_log WHERE action = 'member.login_locked' AND target_id = $1`,
      [member.memberId],
    );
    expect(rows).toEqual([{ request_id: 'spec-lock-request', address: '198.51.100.30' }]);

    const elsewhere = await logins.loginWithPassword(
      { account: 'pw_spec_b', password },
      clientFacts({ ip: '198.51.100.31' }),
    );
    expect(elsewhere).toMatchObject({ memberId: member.memberId });
  });

  it('answers an unknown account like a wrong password', async () => {
    await expect(logins.loginWithPassword({ account: 'nobody_here', password }, clientFacts())).rejects.toMatchObject({
      code: ErrorCode.BAD_CREDENTIALS,
    });
  });
});
