import { ErrorCode } from '@app/envelope';
import { RunningApp, startMembership } from '../../../../test/support/apps';
import { clientFacts } from '../../../../test/membership/client-facts';
import { enrolTotp } from '../../../../test/membership/factors';
import { midStepClock } from '../../../../test/membership/totp';
import { MembershipConfig } from '../config/membership.config';
import { FactorStrength } from '../factors/factor-strength';
import { StepUpService } from '../factors/step-up.service';
import { Member } from '../members/member.entity';
import { MembersService } from '../members/members.service';
import { SessionsService } from '../sessions/sessions.service';
import { AccessTokenService } from './access-token.service';
import { MemberLoginResponse } from './dtos/member-login.dto';
import { MfaChallengeResponse } from './dtos/mfa.dto';
import { LoginService } from './login.service';
import { MfaChallenges } from './mfa-challenges';

// The real use case on a real database and shared state, for members made directly (each sign-in path proved who they are before).
describe('LoginService: what a proven first factor gets', () => {
  const clock = midStepClock();
  let app: RunningApp;
  let logins: LoginService;
  let sessions: SessionsService;
  let config: MembershipConfig;
  let run = 0;

  const newMember = (roles: string[] = []): Promise<Member> =>
    app.app
      .get(MembersService)
      .create(
        { username: `login_spec_${++run}`, nickname: 'Spec', password: 'correct horse battery', roles },
        { method: 'password' },
      );
  const claimsOf = (token: string) => app.app.get(AccessTokenService).verify(token);

  beforeAll(async () => {
    app = await startMembership({ LOG_LEVEL: 'silent', MFA_REQUIRED_ROLES: 'admin' }, { clock });
    logins = app.app.get(LoginService);
    sessions = app.app.get(SessionsService);
    config = app.app.get(MembershipConfig);
  });
  afterAll(() => app?.close());

  it.each([
    ['password', ['pwd']],
    ['phone', ['sms']],
    ['wechat', ['oauth']],
  ])(
    'opens a session for a member without a factor signing in by %s, with amr %j, and answers its tokens',
    async (loginType, amr) => {
      const member = await newMember(['viewer']);
      const here = clientFacts({ ip: '198.51.100.110' });
      const result = (await logins.issueLogin(member, loginType, here)) as MemberLoginResponse;
      expect(result).toEqual({
        memberId: member.id,
        username: member.username,
        nickname: 'Spec',
        avatarUrl: null,
        token: expect.any(String),
        refreshToken: expect.any(String),
        tokenType: 'Bearer',
        expiresIn: config.ACCESS_TOKEN_TTL,
        refreshExpiresIn: config.REFRESH_TOKEN_TTL,
      });
      const [session] = await sessions.list(member.id);
      expect(session).toMatchObject({ loginType, amr, factorStrength: FactorStrength.NONE, ip: '198.51.100.110' });
      expect(claimsOf(result.token)).toMatchObject({
        sub: member.id,
        sid: session.id,
        loginType,
        amr,
        roles: ['viewer'],
      });
      expect((await app.app.get(MembersService).findById(member.id))?.lastLoginTime).toEqual(expect.any(Date));
    },
  );

  it('answers a member with a factor a challenge instead, remembering the sign-in, and opens no session', async () => {
    const member = await newMember();
    await enrolTotp(app.app, member, clock.now());
    const result = (await logins.issueLogin(member, 'phone', clientFacts())) as MfaChallengeResponse;
    expect(result).toEqual({
      mfaRequired: true,
      mfaToken: expect.stringMatching(/^mfa_[A-Za-z0-9_-]{43}$/),
      methods: ['totp', 'recovery_code'],
      enrolmentRequired: false,
      expiresIn: config.MFA_CHALLENGE_TTL_MS,
    });
    expect(await sessions.list(member.id)).toEqual([]);
    expect((await app.app.get(MfaChallenges).open(result.mfaToken, false)).pending).toEqual({
      memberId: member.id,
      loginType: 'phone',
      firstAmr: 'sms',
      enrol: false,
    });
  });

  it('asks a member whose role requires a factor, and who has none, to enrol one; with one, to answer it', async () => {
    const admin = await newMember(['admin']);
    const first = (await logins.issueLogin(
      admin,
      'password',
      clientFacts(),
      admin.passwordHash!,
    )) as MfaChallengeResponse;
    expect(first).toMatchObject({ mfaRequired: true, methods: ['totp', 'passkey'], enrolmentRequired: true });
    const challenges = app.app.get(MfaChallenges);
    expect((await challenges.open(first.mfaToken, true)).pending).toEqual({
      memberId: admin.id,
      loginType: 'password',
      firstAmr: 'pwd',
      passwordHash: admin.passwordHash,
      enrol: true,
    });
    // An enrolment challenge answers no second factor.
    await expect(challenges.open(first.mfaToken, false)).rejects.toMatchObject({
      code: ErrorCode.MFA_CHALLENGE_INVALID,
    });
    expect(await sessions.list(admin.id)).toEqual([]);

    await enrolTotp(app.app, admin, clock.now());
    expect(await logins.issueLogin(admin, 'password', clientFacts(), admin.passwordHash!)).toMatchObject({
      methods: ['totp', 'recovery_code'],
      enrolmentRequired: false,
    });
  });

  it('opens no session when the password checked was replaced meanwhile', async () => {
    const member = await newMember();
    await app.app.get(MembersService).setPassword(member.id, 'a password set meanwhile');
    await expect(logins.issueLogin(member, 'password', clientFacts(), member.passwordHash!)).rejects.toMatchObject({
      code: ErrorCode.BAD_CREDENTIALS,
    });
    expect(await sessions.list(member.id)).toEqual([]);
    const current = (await app.app.get(MembersService).findById(member.id))!;
    expect(await logins.issueLogin(current, 'password', clientFacts(), current.passwordHash!)).toMatchObject({
      memberId: member.id,
    });
  });

  it('completes a sign-in with the factors shown: the session and token carry them, and the session counts as stepped up', async () => {
    const member = await newMember();
    await enrolTotp(app.app, member, clock.now());
    const result = await logins.completeLogin(member, 'password', clientFacts(), undefined, {
      amr: ['pwd', 'otp', 'mfa'],
      factorStrength: FactorStrength.TOTP,
    });
    expect(claimsOf(result.token)).toMatchObject({ loginType: 'password', amr: ['pwd', 'otp', 'mfa'] });
    const [session] = await sessions.list(member.id);
    expect(session).toMatchObject({ id: claimsOf(result.token)?.sid, factorStrength: FactorStrength.TOTP });
    expect(await app.app.get(StepUpService).status(member.id, session.id)).toEqual({
      required: 'totp',
      satisfiedUntil: new Date(clock.now() + config.STEP_UP_MAX_AGE_MS),
    });
  });
});
