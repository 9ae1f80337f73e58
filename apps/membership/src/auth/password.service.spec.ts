import { ErrorCode } from '@app/envelope';
import { addressLimitKey } from '@app/platform';
import { RunningApp, startMembership } from '../../../../test/support/apps';
import { FakeClock } from '../../../../test/support/clock';
import { clientFacts } from '../../../../test/membership/client-facts';
import { enrolTotp } from '../../../../test/membership/factors';
import { FakeAliyun, startFakeAliyun } from '../../../../test/membership/fakes';
import { principalOf } from '../../../../test/membership/requesters';
import { otherCode } from '../../../../test/membership/totp';
import { FactorStrength } from '../factors/factor-strength';
import { StepUpService } from '../factors/step-up.service';
import { CreateMemberInput, MembersService } from '../members/members.service';
import { HashQueueFull, PasswordHasher } from '../security/password-hasher';
import { SessionsService } from '../sessions/sessions.service';
import { VerificationService } from '../verification/verification.service';
import { LoginService } from './login.service';
import { PasswordService } from './password.service';

const OLD = 'correct horse battery';
const NEW = 'a brand new password';

// The real use case on a real database, with codes sent to a protocol-true SMS fake (test/membership/fakes.ts).
describe('PasswordService: change (signed in) and reset (by code)', () => {
  const clock = new FakeClock();
  let sms: FakeAliyun;
  let app: RunningApp;
  let passwords: PasswordService;
  let members: MembersService;
  let sessions: SessionsService;
  let run = 0;

  const newMember = (input: Partial<CreateMemberInput> = {}) =>
    members.create({ username: `password_spec_${++run}`, password: OLD, ...input }, { method: 'password' });
  /** A session of the member signed in with a password alone: the principal of its access token and its id. */
  const signIn = async (memberId: string) => {
    const member = (await members.findById(memberId))!;
    const login = await app.app.get(LoginService).completeLogin(member, 'password', clientFacts(), undefined, {
      amr: ['pwd'],
      factorStrength: FactorStrength.NONE,
    });
    const principal = principalOf(app.app, login.token);
    return { principal, sid: (principal.claims as { sid: string }).sid };
  };
  const passwordIs = async (memberId: string, password: string) =>
    (await app.app.get(PasswordHasher).verify((await members.findById(memberId))!.passwordHash, password)).ok;
  const smsCode = async (phone: string) => {
    await app.app.get(VerificationService).send({ channel: 'sms', target: phone }, '198.51.100.120', 'en');
    return sms.lastCode(phone);
  };

  beforeAll(async () => {
    sms = await startFakeAliyun();
    app = await startMembership({ ...sms.env, LOG_LEVEL: 'silent', CODE_RESEND_INTERVAL_MS: '0' }, { clock });
    passwords = app.app.get(PasswordService);
    members = app.app.get(MembersService);
    sessions = app.app.get(SessionsService);
  });
  afterAll(async () => {
    await app?.close();
    await sms?.close();
  });

  it('changes the password over the old one, keeping the session that asked and ending the others', async () => {
    const member = await newMember();
    const { principal, sid } = await signIn(member.id);
    await signIn(member.id);
    await signIn(member.id);
    expect(await passwords.change(principal, { oldPassword: OLD, newPassword: NEW })).toEqual({ revokedSessions: 2 });
    expect((await sessions.list(member.id)).map((s) => s.id)).toEqual([sid]);
    expect(await passwordIs(member.id, NEW)).toBe(true);
    expect(await passwordIs(member.id, OLD)).toBe(false);
  });

  it('refuses a wrong old password, or a new one too short, and changes nothing', async () => {
    const member = await newMember();
    const { principal } = await signIn(member.id);
    await signIn(member.id);
    await expect(
      passwords.change(principal, { oldPassword: 'not the password', newPassword: NEW }),
    ).rejects.toMatchObject({
      code: ErrorCode.BAD_CREDENTIALS,
      message: 'Old password is wrong',
    });
    await expect(passwords.change(principal, { oldPassword: OLD, newPassword: 'short' })).rejects.toMatchObject({
      code: ErrorCode.VALIDATION_FAILED,
      extras: { details: { fields: [{ field: 'newPassword', message: expect.any(String) }] } },
    });
    expect(await passwordIs(member.id, OLD)).toBe(true);
    expect(await sessions.list(member.id)).toHaveLength(2);
  });

  it('asks a member with a second factor for a step-up first', async () => {
    const member = await newMember();
    await enrolTotp(app.app, member, clock.now());
    const { principal, sid } = await signIn(member.id);
    await expect(passwords.change(principal, { oldPassword: OLD, newPassword: NEW })).rejects.toMatchObject({
      code: ErrorCode.STEP_UP_REQUIRED,
    });
    expect(await passwordIs(member.id, OLD)).toBe(true);
    await app.app.get(StepUpService).record(member.id, sid, { amr: 'otp', strength: FactorStrength.TOTP });
    expect(await passwords.change(principal, { oldPassword: OLD, newPassword: NEW })).toEqual({ revokedSessions: 0 });
    expect(await passwordIs(member.id, NEW)).toBe(true);
  });

  it('sets a first password only with a fresh code sent to a verified phone or email the member has', async () => {
    const phone = '13800138201';
    const member = await newMember({ password: null, phone, phoneProven: true, email: 'unproven@example.com' });
    const { principal } = await signIn(member.id);
    await expect(passwords.change(principal, { newPassword: NEW })).rejects.toMatchObject({
      code: ErrorCode.VALIDATION_FAILED,
      extras: { details: { fields: [{ field: 'code', message: expect.stringContaining('verified phone') }] } },
    });
    const code = await smsCode(phone);
    // The email is only claimed: no code to it can prove the member.
    await expect(passwords.change(principal, { newPassword: NEW, type: 'email', code })).rejects.toMatchObject({
      code: ErrorCode.CONFLICT,
      extras: { details: { field: 'type' } },
    });
    await expect(passwords.change(principal, { newPassword: NEW, code: otherCode(code) })).rejects.toMatchObject({
      code: ErrorCode.CODE_INVALID,
    });
    expect((await members.findById(member.id))?.passwordHash).toBeNull();
    expect(await passwords.change(principal, { newPassword: NEW, code })).toEqual({ revokedSessions: 0 });
    expect(await passwordIs(member.id, NEW)).toBe(true);
  });

  it('resets the password of the verified holder of a phone by its code, ending every session; the code works once', async () => {
    const phone = '13800138202';
    const member = await newMember({ phone, phoneProven: true });
    await signIn(member.id);
    await signIn(member.id);
    const code = await smsCode(phone);
    const hash = jest.spyOn(app.app.get(PasswordHasher), 'hash');
    const client = clientFacts({ ip: '203.0.113.9' });
    // A hash refused for a full queue (503) leaves the code usable: it is used up only once the hash is made.
    hash.mockRejectedValueOnce(new HashQueueFull());
    await expect(passwords.reset({ type: 'sms', phone, code, newPassword: NEW }, client)).rejects.toBeInstanceOf(
      HashQueueFull,
    );
    expect(await passwordIs(member.id, OLD)).toBe(true);
    expect(await passwords.reset({ type: 'sms', phone, code, newPassword: NEW }, client)).toEqual({
      revokedSessions: 2,
    });
    // The new password's hash waited its turn under the caller's address, as a sign-in's does (HashSlots).
    expect(hash).toHaveBeenCalledWith(NEW, addressLimitKey('203.0.113.9'));
    hash.mockRestore();
    expect(await sessions.list(member.id)).toEqual([]);
    expect(await passwordIs(member.id, NEW)).toBe(true);
    await expect(
      passwords.reset({ type: 'sms', phone, code, newPassword: 'yet another password' }),
    ).rejects.toMatchObject({ code: ErrorCode.CODE_INVALID });
    expect(await passwordIs(member.id, NEW)).toBe(true);
  });

  it('refuses a reset with a wrong code, a new password too short, or for a phone nobody holds', async () => {
    const phone = '13800138203';
    const member = await newMember({ phone, phoneProven: true });
    const code = await smsCode(phone);
    await expect(
      passwords.reset({ type: 'sms', phone, code: otherCode(code), newPassword: NEW }),
    ).rejects.toMatchObject({
      code: ErrorCode.CODE_INVALID,
    });
    await expect(passwords.reset({ type: 'sms', phone, code, newPassword: 'short' })).rejects.toMatchObject({
      code: ErrorCode.VALIDATION_FAILED,
    });
    expect(await passwordIs(member.id, OLD)).toBe(true);
    const nobody = '13800138204';
    await expect(
      passwords.reset({ type: 'sms', phone: nobody, code: await smsCode(nobody), newPassword: NEW }),
    ).rejects.toMatchObject({ code: ErrorCode.NOT_FOUND, message: 'No member with this phone' });
  });

  it('resets for the owner of a phone only claimed: proves it on an account with no other way in, takes it back from one with another', async () => {
    const claimed = '13800138205';
    const onlyWayIn = await newMember({ phone: claimed });
    expect(
      await passwords.reset({ type: 'sms', phone: claimed, code: await smsCode(claimed), newPassword: NEW }),
    ).toEqual({ revokedSessions: 0 });
    expect((await members.findById(onlyWayIn.id))?.phoneVerifiedTime).toEqual(expect.any(Date));
    expect(await passwordIs(onlyWayIn.id, NEW)).toBe(true);

    const taken = '13800138206';
    const squatter = await newMember({ phone: taken, email: 'squatter@example.com', emailProven: true });
    await expect(
      passwords.reset({ type: 'sms', phone: taken, code: await smsCode(taken), newPassword: NEW }),
    ).rejects.toMatchObject({ code: ErrorCode.NOT_FOUND });
    expect((await members.findById(squatter.id))?.phone).toBeNull();
    expect(await passwordIs(squatter.id, OLD)).toBe(true);
  });
});
