import { ErrorCode } from '@app/envelope';
import { RunningApp, startMembership } from '../../../../test/support/apps';
import { FakeSmtp, readMail, startFakeSmtp } from '../../../../test/membership/fakes';
import { addPasskey, enrolTotp } from '../../../../test/membership/factors';
import { WEBAUTHN_ENV } from '../../../../test/membership/software-authenticator';
import { midStepClock, otherCode, TOTP_STEP_MS, totpCode } from '../../../../test/membership/totp';
import { Member } from '../members/member.entity';
import { MembersService } from '../members/members.service';
import { FactorStrength } from './factor-strength';
import { MemberAssertionPurpose, PasskeysService } from './passkeys.service';
import { RecoveryCodesService } from './recovery-codes.service';
import { SecondFactorsService } from './second-factors.service';

const LOCK_MS = 3_600_000;

// The real service on a real database and shared state; notices go to a real SMTP server (test/membership/fakes.ts).
describe("SecondFactorsService: a member's factors and the check of an answer", () => {
  const clock = midStepClock();
  let smtp: FakeSmtp;
  let app: RunningApp;
  let factors: SecondFactorsService;
  let run = 0;

  const newMember = (): Promise<Member> => {
    const username = `factors_spec_${++run}`;
    return app.app
      .get(MembersService)
      .create({ username, email: `${username}@example.com`, emailProven: true }, { method: 'password' });
  };
  const purposeOf = (member: Member): MemberAssertionPurpose => ({
    kind: 'second-factor',
    memberId: member.id,
    bind: 'challenge-1',
  });
  /** A member with an authenticator app, whose enrolment step has passed. */
  const withTotp = async () => {
    const member = await newMember();
    const enrolled = await enrolTotp(app.app, member, clock.now());
    clock.advance(TOTP_STEP_MS);
    return { member, secret: enrolled.secret, recoveryCodes: enrolled.recoveryCodes! };
  };

  beforeAll(async () => {
    smtp = await startFakeSmtp();
    app = await startMembership(
      {
        ...smtp.env,
        ...WEBAUTHN_ENV,
        LOG_LEVEL: 'silent',
        MFA_MEMBER_MAX_FAILURES: '3',
        // Counted in shared state by real time: a window far longer than the run.
        MFA_LOCK_MS: String(LOCK_MS),
      },
      { clock },
    );
    factors = app.app.get(SecondFactorsService);
  });
  afterAll(async () => {
    await app?.close();
    await smtp?.close();
  });

  it('tells what a member can answer with: nothing without a factor; the app and recovery codes; a passkey as the strongest', async () => {
    const member = await newMember();
    expect(await factors.of(member.id)).toMatchObject({
      methods: [],
      strength: FactorStrength.NONE,
      totp: false,
      passkeys: 0,
      recoveryCodes: 0,
    });
    await enrolTotp(app.app, member, clock.now());
    expect(await factors.of(member.id)).toMatchObject({
      methods: ['totp', 'recovery_code'],
      strength: FactorStrength.TOTP,
      totp: true,
      totpTime: new Date(clock.now()),
      recoveryCodes: 10,
    });
    await addPasskey(app.app, member);
    expect(await factors.of(member.id)).toMatchObject({
      methods: ['totp', 'passkey', 'recovery_code'],
      strength: FactorStrength.PASSKEY,
      passkeys: 1,
    });
  });

  it('offers recovery codes only while some are left and only with a factor', async () => {
    const { member, recoveryCodes } = await withTotp();
    const recovery = app.app.get(RecoveryCodesService);
    for (const code of recoveryCodes) await recovery.use(member.id, code);
    expect(await factors.of(member.id)).toMatchObject({ methods: ['totp'], recoveryCodes: 0 });

    const without = await newMember();
    await recovery.regenerate(without.id);
    expect(await factors.of(without.id)).toMatchObject({
      methods: [],
      strength: FactorStrength.NONE,
      recoveryCodes: 10,
    });
  });

  it('takes an app code as an otp of app strength, once', async () => {
    const { member, secret } = await withTotp();
    const answer = { method: 'totp' as const, code: totpCode(secret, clock.now()) };
    expect(await factors.check(member, answer, purposeOf(member), 'en')).toEqual({
      amr: 'otp',
      strength: FactorStrength.TOTP,
    });
    await expect(factors.check(member, answer, purposeOf(member), 'en')).rejects.toMatchObject({
      code: ErrorCode.SECOND_FACTOR_INVALID,
      message: 'The code is wrong or was already used',
    });
  });

  it("takes a recovery code as an otp of the strongest kind and tells the member by mail, in the answer's language, how many are left", async () => {
    const { member, recoveryCodes } = await withTotp();
    const mailsBefore = smtp.mails.length;
    expect(
      await factors.check(member, { method: 'recovery_code', code: recoveryCodes[0] }, purposeOf(member), 'zh-CN'),
    ).toEqual({ amr: 'otp', strength: FactorStrength.PASSKEY });
    const notices = smtp.mails.slice(mailsBefore).filter((m) => m.to === member.email);
    expect(notices).toHaveLength(1);
    expect(readMail(notices[0].text).body).toContain('有人使用恢复码登录了您的Membership账号（剩余 9 个）');
    await expect(
      factors.check(member, { method: 'recovery_code', code: recoveryCodes[0] }, purposeOf(member), 'en'),
    ).rejects.toMatchObject({ code: ErrorCode.SECOND_FACTOR_INVALID });
    expect(smtp.mails.slice(mailsBefore).filter((m) => m.to === member.email)).toHaveLength(1);
  });

  it('takes a passkey as hwk when bound to one device and swk when synced, only for the purpose its challenge was issued for', async () => {
    const member = await newMember();
    const single = await addPasskey(app.app, member);
    const passkeys = app.app.get(PasskeysService);
    const assertion = async (purpose: MemberAssertionPurpose, authenticator = single.authenticator) => ({
      method: 'passkey' as const,
      credential: authenticator.assert(await passkeys.authenticationOptions(purpose)),
    });
    expect(await factors.check(member, await assertion(purposeOf(member)), purposeOf(member), 'en')).toEqual({
      amr: 'hwk',
      strength: FactorStrength.PASSKEY,
    });
    const synced = await addPasskey(app.app, member, { backedUp: true });
    expect(
      await factors.check(member, await assertion(purposeOf(member), synced.authenticator), purposeOf(member), 'en'),
    ).toEqual({ amr: 'swk', strength: FactorStrength.PASSKEY });
    const stepUp: MemberAssertionPurpose = { kind: 'step-up', memberId: member.id, bind: 'session-1' };
    await expect(factors.check(member, await assertion(stepUp), purposeOf(member), 'en')).rejects.toMatchObject({
      code: ErrorCode.SECOND_FACTOR_INVALID,
      message: 'The passkey was not accepted',
    });
  });

  it('counts an answer without its code or credential as a wrong one', async () => {
    const { member } = await withTotp();
    // Each is counted: the third (MFA_MEMBER_MAX_FAILURES) locks the member.
    for (const method of ['totp', 'recovery_code', 'passkey'] as const) {
      await expect(factors.check(member, { method }, purposeOf(member), 'en')).rejects.toMatchObject({
        code: method === 'passkey' ? ErrorCode.ACCOUNT_LOCKED : ErrorCode.SECOND_FACTOR_INVALID,
      });
    }
  });

  it("locks the member's checks after MFA_MEMBER_MAX_FAILURES wrong answers, the right one included, saying for how long; others are not locked", async () => {
    const { member, secret } = await withTotp();
    const other = await withTotp();
    const right = () => ({ method: 'totp' as const, code: totpCode(secret, clock.now()) });
    const wrong = { method: 'totp' as const, code: otherCode(right().code) };
    for (let i = 0; i < 2; i++) {
      await expect(factors.check(member, wrong, purposeOf(member), 'en')).rejects.toMatchObject({
        code: ErrorCode.SECOND_FACTOR_INVALID,
      });
    }
    const locked = {
      code: ErrorCode.ACCOUNT_LOCKED,
      message: 'Too many wrong second-factor attempts; try again later',
    };
    await expect(factors.check(member, wrong, purposeOf(member), 'en')).rejects.toMatchObject(locked);
    const refused = await factors.check(member, right(), purposeOf(member), 'en').catch((err: unknown) => err);
    expect(refused).toMatchObject(locked);
    const { retryAfterSeconds } = (refused as { extras: { retryAfterSeconds: number } }).extras;
    expect(retryAfterSeconds).toBeGreaterThan(LOCK_MS / 1000 - 60);
    expect(retryAfterSeconds).toBeLessThanOrEqual(LOCK_MS / 1000);

    const answer = { method: 'totp' as const, code: totpCode(other.secret, clock.now()) };
    expect(await factors.check(other.member, answer, purposeOf(other.member), 'en')).toMatchObject({ amr: 'otp' });
  });
});
