import { ErrorCode } from '@app/envelope';
import { RunningApp, startMembership } from '../../../../test/support/apps';
import { FakeClock } from '../../../../test/support/clock';
import { clientFacts } from '../../../../test/membership/client-facts';
import { addPasskey, enrolTotp } from '../../../../test/membership/factors';
import { WEBAUTHN_ENV } from '../../../../test/membership/software-authenticator';
import { MembershipConfig } from '../config/membership.config';
import { Member } from '../members/member.entity';
import { MembersService } from '../members/members.service';
import { SessionAuthentication, SessionsService } from '../sessions/sessions.service';
import { FactorStrength } from './factor-strength';
import { StepUpService } from './step-up.service';

const PASSWORD_ONLY: SessionAuthentication = { amr: ['pwd'], factorStrength: FactorStrength.NONE };
const WITH_APP: SessionAuthentication = { amr: ['pwd', 'otp', 'mfa'], factorStrength: FactorStrength.TOTP };
const WITH_PASSKEY: SessionAuthentication = { amr: ['pwd', 'hwk', 'mfa'], factorStrength: FactorStrength.PASSKEY };

// The real service on a real database; sessions are opened as sign-in opens them, with the factor they showed.
describe('StepUpService: a recent enough showing of the strongest factor', () => {
  const clock = new FakeClock();
  let app: RunningApp;
  let stepUp: StepUpService;
  let sessions: SessionsService;
  let maxAge: number;
  let run = 0;

  const newMember = (): Promise<Member> =>
    app.app.get(MembersService).create({ username: `stepup_spec_${++run}` }, { method: 'password' });
  const withTotp = async () => {
    const member = await newMember();
    await enrolTotp(app.app, member, clock.now());
    return member;
  };
  const sessionOf = async (member: Member, auth: SessionAuthentication) =>
    (await sessions.start(member.id, 'password', clientFacts(), undefined, auth))!.session.id;
  const required = (kind: 'totp' | 'passkey') => ({
    code: ErrorCode.STEP_UP_REQUIRED,
    extras: {
      details: {
        required: kind,
        methods: kind === 'passkey' ? ['passkey', 'recovery_code'] : ['totp', 'passkey', 'recovery_code'],
      },
    },
  });

  beforeAll(async () => {
    app = await startMembership({ LOG_LEVEL: 'silent', ...WEBAUTHN_ENV }, { clock });
    stepUp = app.app.get(StepUpService);
    sessions = app.app.get(SessionsService);
    maxAge = app.app.get(MembershipConfig).STEP_UP_MAX_AGE_MS;
  });
  afterAll(() => app?.close());

  it('asks nothing of a member without a factor, with or without a session', async () => {
    const member = await newMember();
    const sid = await sessionOf(member, PASSWORD_ONLY);
    expect(await stepUp.status(member.id, sid)).toEqual({ required: null, satisfiedUntil: null });
    await expect(stepUp.assert(member.id, sid)).resolves.toBeUndefined();
    await expect(stepUp.assert(member.id, undefined)).resolves.toBeUndefined();
  });

  it('counts a sign-in with the app as a step-up for STEP_UP_MAX_AGE_MS, and no longer', async () => {
    const member = await withTotp();
    const signedIn = clock.now();
    const sid = await sessionOf(member, WITH_APP);
    expect(await stepUp.status(member.id, sid)).toEqual({
      required: 'totp',
      satisfiedUntil: new Date(signedIn + maxAge),
    });
    clock.advance(maxAge - 1);
    await expect(stepUp.assert(member.id, sid)).resolves.toBeUndefined();
    clock.advance(1);
    expect(await stepUp.status(member.id, sid)).toEqual({ required: 'totp', satisfiedUntil: null });
    await expect(stepUp.assert(member.id, sid)).rejects.toMatchObject({
      ...required('totp'),
      message: 'This change needs a recent sign-in with your authenticator app; verify it again (step-up)',
    });
  });

  it('asks a session that showed no factor, even while another session of the member is stepped up, and a request without a session', async () => {
    const member = await withTotp();
    const plain = await sessionOf(member, PASSWORD_ONLY);
    const stepped = await sessionOf(member, WITH_APP);
    await expect(stepUp.assert(member.id, stepped)).resolves.toBeUndefined();
    await expect(stepUp.assert(member.id, plain)).rejects.toMatchObject(required('totp'));
    await expect(stepUp.assert(member.id, undefined)).rejects.toMatchObject(required('totp'));
    // Nor does a stepped-up session of someone else count.
    const other = await withTotp();
    await expect(stepUp.assert(member.id, await sessionOf(other, WITH_APP))).rejects.toMatchObject(required('totp'));
  });

  it('asks a passkey holder for the passkey: a showing of the app does not do', async () => {
    const member = await withTotp();
    await addPasskey(app.app, member);
    const withApp = await sessionOf(member, WITH_APP);
    expect(await stepUp.status(member.id, withApp)).toEqual({ required: 'passkey', satisfiedUntil: null });
    await expect(stepUp.assert(member.id, withApp)).rejects.toMatchObject(required('passkey'));
    await expect(stepUp.assert(member.id, await sessionOf(member, WITH_PASSKEY))).resolves.toBeUndefined();
  });

  it('records a factor shown in a session: its amr grows and the step-up counts from then', async () => {
    const member = await withTotp();
    const sid = await sessionOf(member, PASSWORD_ONLY);
    clock.advance(3_600_000);
    expect(await stepUp.record(member.id, sid, { amr: 'otp', strength: FactorStrength.TOTP })).toEqual([
      'pwd',
      'otp',
      'mfa',
    ]);
    expect(await stepUp.status(member.id, sid)).toEqual({
      required: 'totp',
      satisfiedUntil: new Date(clock.now() + maxAge),
    });
    expect(await stepUp.record(member.id, sid, { amr: 'hwk', strength: FactorStrength.PASSKEY })).toEqual([
      'pwd',
      'otp',
      'hwk',
      'mfa',
    ]);
    expect((await sessions.list(member.id)).find((s) => s.id === sid)).toMatchObject({
      amr: ['pwd', 'otp', 'hwk', 'mfa'],
      factorStrength: FactorStrength.PASSKEY,
    });
  });

  it("records nothing for a session that ended or is another member's, and an ended session is not stepped up", async () => {
    const member = await withTotp();
    const other = await newMember();
    const sid = await sessionOf(member, WITH_APP);
    expect(await stepUp.record(other.id, sid, { amr: 'otp', strength: FactorStrength.TOTP })).toBeNull();
    await sessions.revoke(member.id, sid, 'logout');
    expect(await stepUp.record(member.id, sid, { amr: 'otp', strength: FactorStrength.TOTP })).toBeNull();
    expect(await stepUp.status(member.id, sid)).toEqual({ required: 'totp', satisfiedUntil: null });
    expect(await stepUp.record(member.id, 'not-a-session', { amr: 'otp', strength: FactorStrength.TOTP })).toBeNull();
  });
});
