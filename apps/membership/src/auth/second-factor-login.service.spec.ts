import { ErrorCode } from '@app/envelope';
import { RunningApp, startMembership } from '../../../../test/support/apps';
import { FakeClock } from '../../../../test/support/clock';
import { queryRows } from '../../../../test/support/database';
import { clientFacts } from '../../../../test/membership/client-facts';
import { otherCode, totpCode } from '../../../../test/membership/totp';
import { MembersService } from '../members/members.service';
import { SessionsService } from '../sessions/sessions.service';
import { MemberLoginResponse } from './dtos/member-login.dto';
import { MfaChallengeResponse } from './dtos/mfa.dto';
import { PasswordLoginService } from './password-login.service';
import { SecondFactorLoginService } from './second-factor-login.service';

// The real use cases on a real database, with the app's clock moved instead of waiting for the next TOTP step.
describe('SecondFactorLoginService: enforced enrolment and the second step of sign-in', () => {
  const clock = new FakeClock();
  const password = 'correct horse battery';
  let app: RunningApp;
  let passwordLogin: PasswordLoginService;
  let signIn: SecondFactorLoginService;
  let memberId: string;
  let secret: string;

  const codeNow = () => totpCode(secret, clock.now());
  const challenge = async () =>
    (await passwordLogin.loginWithPassword({ account: 'mfa_spec', password }, clientFacts())) as MfaChallengeResponse;

  beforeAll(async () => {
    app = await startMembership({ LOG_LEVEL: 'silent', MFA_REQUIRED_ROLES: 'admin' }, { clock });
    passwordLogin = app.app.get(PasswordLoginService);
    signIn = app.app.get(SecondFactorLoginService);
    memberId = (
      await app.app
        .get(MembersService)
        .create({ username: 'mfa_spec', password, roles: ['admin'] }, { method: 'password' })
    ).id;
  });
  afterAll(() => app?.close());

  it('enrols the required authenticator app, audited as the member with the client facts, and opens the session', async () => {
    const first = await challenge();
    expect(first).toMatchObject({ mfaRequired: true, enrolmentRequired: true });
    secret = (await signIn.enrolTotp(first.mfaToken)).secret;
    const here = clientFacts({ ip: '198.51.100.70', requestId: 'spec-enrol-request' });
    const done = await signIn.confirmEnrolTotp(first.mfaToken, codeNow(), here);
    expect(done).toMatchObject({ memberId, tokenType: 'Bearer' });
    expect(done.recoveryCodes.length).toBeGreaterThan(0);
    const audited = await queryRows(
      app.dbUrl,
      `SELECT actor_kind, actor_id, request_id, address FROM audit_log WHERE action = 'member.factor_changed' AND target_id = $1`,
      [memberId],
    );
    expect(audited).toEqual([
      { actor_kind: 'member', actor_id: memberId, request_id: 'spec-enrol-request', address: '198.51.100.70' },
    ]);
    const session = (await app.app.get(SessionsService).list(memberId)).find((s) => s.ip === '198.51.100.70');
    expect(session?.amr).toEqual(['pwd', 'otp', 'mfa']);
  });

  it('completes a challenge with the app code, records the client on the session, and voids the challenge once used', async () => {
    clock.advance(30_000);
    const next = await challenge();
    expect(next).toMatchObject({
      mfaRequired: true,
      enrolmentRequired: false,
      methods: expect.arrayContaining(['totp']),
    });
    const wrong = otherCode(codeNow());
    await expect(signIn.verify(next.mfaToken, { method: 'totp', code: wrong }, clientFacts())).rejects.toMatchObject({
      code: ErrorCode.SECOND_FACTOR_INVALID,
    });

    const result: MemberLoginResponse = await signIn.verify(
      next.mfaToken,
      { method: 'totp', code: codeNow() },
      clientFacts({ ip: '198.51.100.71', userAgent: 'curl/8.5.0' }),
    );
    expect(result).toMatchObject({ memberId });
    const session = (await app.app.get(SessionsService).list(memberId)).find((s) => s.ip === '198.51.100.71');
    expect(session).toMatchObject({ deviceName: 'curl', loginType: 'password', amr: ['pwd', 'otp', 'mfa'] });
    await expect(
      signIn.verify(next.mfaToken, { method: 'totp', code: codeNow() }, clientFacts()),
    ).rejects.toMatchObject({ code: ErrorCode.MFA_CHALLENGE_INVALID });
  });
});
