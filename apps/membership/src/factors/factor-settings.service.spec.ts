import { ErrorCode } from '@app/envelope';
import { RunningApp, startMembership } from '../../../../test/support/apps';
import { queryRows } from '../../../../test/support/database';
import { clientFacts } from '../../../../test/membership/client-facts';
import { addPasskey, enrolTotp } from '../../../../test/membership/factors';
import { requesterOf } from '../../../../test/membership/requesters';
import { SoftwareAuthenticator, WEBAUTHN_ENV } from '../../../../test/membership/software-authenticator';
import { midStepClock, otherCode, totpCode } from '../../../../test/membership/totp';
import { Member } from '../members/member.entity';
import { MembersService } from '../members/members.service';
import { SessionAuthentication, SessionsService } from '../sessions/sessions.service';
import { FactorSettingsService } from './factor-settings.service';
import { FactorStrength } from './factor-strength';
import { RecoveryCodesService } from './recovery-codes.service';

const PASSWORD_ONLY: SessionAuthentication = { amr: ['pwd'], factorStrength: FactorStrength.NONE };
const WITH_APP: SessionAuthentication = { amr: ['pwd', 'otp', 'mfa'], factorStrength: FactorStrength.TOTP };
const WITH_PASSKEY: SessionAuthentication = { amr: ['pwd', 'hwk', 'mfa'], factorStrength: FactorStrength.PASSKEY };

// The real use case on a real database; passkeys come from a software authenticator (test/membership/software-authenticator.ts).
describe("FactorSettingsService: adding and removing a member's factors", () => {
  const clock = midStepClock();
  let app: RunningApp;
  let settings: FactorSettingsService;
  let sessions: SessionsService;
  let run = 0;

  const newMember = (roles: string[] = []): Promise<Member> =>
    app.app.get(MembersService).create({ username: `settings_spec_${++run}`, roles }, { method: 'password' });
  const sessionOf = async (member: Member, auth: SessionAuthentication) =>
    (await sessions.start(member.id, 'password', clientFacts(), undefined, auth))!.session.id;
  const liveSessions = async (member: Member) => (await sessions.list(member.id)).map((s) => s.id).sort();
  const factorChanges = async (member: Member) =>
    (
      await queryRows(
        app.dbUrl,
        `SELECT after FROM audit_log WHERE action = 'member.factor_changed' AND target_id = $1 ORDER BY id`,
        [member.id],
      )
    ).map((r) => r.after);
  const storedRecoveryCodes = async (member: Member) =>
    (
      await queryRows(app.dbUrl, `SELECT count(*)::int AS n FROM member_recovery_codes WHERE member_id = $1`, [
        member.id,
      ])
    )[0].n;

  beforeAll(async () => {
    app = await startMembership(
      { LOG_LEVEL: 'silent', ...WEBAUTHN_ENV, MFA_REQUIRED_ROLES: 'admin,ops,none' },
      { clock },
    );
    settings = app.app.get(FactorSettingsService);
    sessions = app.app.get(SessionsService);
  });
  afterAll(() => app?.close());

  it('shows a member without a factor none, not even recovery codes left over, and whether their role requires one (MFA_REQUIRED_ROLES)', async () => {
    const member = await newMember();
    await app.app.get(RecoveryCodesService).regenerate(member.id);
    expect(await settings.overview(member, await sessionOf(member, PASSWORD_ONLY))).toEqual({
      totp: { enabled: false, createdTime: null },
      passkeys: [],
      recoveryCodes: { remaining: 0, createdTime: null },
      stepUp: { required: null, satisfiedUntil: null },
      mfaRequiredByRole: false,
    });
    const byRole = async (roles: string[]) => settings.mfaRequiredByRole(await newMember(roles));
    expect(await byRole(['ops'])).toBe(true);
    expect(await byRole(['viewer', 'admin'])).toBe(true);
    expect(await byRole(['none'])).toBe(false);
    expect(await byRole(['viewer'])).toBe(false);
  });

  it("enables the app as a first factor: recovery codes come with it, audited as the member's own change, and the member's other sessions end", async () => {
    const member = await newMember();
    const kept = await sessionOf(member, PASSWORD_ONLY);
    await sessionOf(member, PASSWORD_ONLY);
    const begun = await settings.beginTotp(member);
    expect(new URL(begun.otpauthUri).searchParams.get('issuer')).toBe('Membership');
    expect(decodeURIComponent(begun.otpauthUri)).toContain(`:${member.username}?`);
    const here = clientFacts({ ip: '198.51.100.90', requestId: 'spec-totp-request' });
    const codes = await settings.confirmTotp(requesterOf(member, kept, here), totpCode(begun.secret, clock.now()));
    expect(codes).toHaveLength(10);
    expect(await liveSessions(member)).toEqual([kept]);
    const audited = await queryRows(
      app.dbUrl,
      `SELECT actor_kind, actor_id, request_id, address, after FROM audit_log WHERE action = 'member.factor_changed' AND target_id = $1`,
      [member.id],
    );
    expect(audited).toEqual([
      {
        actor_kind: 'member',
        actor_id: member.id,
        request_id: 'spec-totp-request',
        address: '198.51.100.90',
        after: { change: 'totp_enabled', firstFactor: true },
      },
    ]);
    expect(await settings.overview(member, kept)).toMatchObject({
      totp: { enabled: true, createdTime: new Date(clock.now()) },
      recoveryCodes: { remaining: 10 },
      stepUp: { required: 'totp', satisfiedUntil: null },
    });
  });

  it('adds a second factor without new recovery codes: the first ones keep working', async () => {
    const member = await newMember();
    const { recoveryCodes } = await enrolTotp(app.app, member, clock.now());
    const authenticator = new SoftwareAuthenticator();
    const credential = authenticator.register(await settings.passkeyOptions(member));
    const added = await settings.addPasskey(requesterOf(member), credential, undefined);
    expect(added).toEqual({
      passkey: {
        id: expect.any(String),
        name: 'Passkey',
        createdTime: expect.any(Date),
        lastUsedTime: null,
        backedUp: false,
        deviceType: 'singleDevice',
        transports: ['internal'],
      },
      recoveryCodes: null,
    });
    expect((await factorChanges(member)).at(-1)).toEqual({
      change: 'passkey_added',
      passkey: { id: added.passkey.id, name: 'Passkey' },
    });
    expect(await app.app.get(RecoveryCodesService).use(member.id, recoveryCodes![0])).toBe(9);
  });

  it('refuses a wrong first app code and changes nothing: no factor, no codes, no session ended', async () => {
    const member = await newMember();
    const sid = await sessionOf(member, PASSWORD_ONLY);
    const other = await sessionOf(member, PASSWORD_ONLY);
    const { secret } = await settings.beginTotp(member);
    await expect(
      settings.confirmTotp(requesterOf(member, sid), otherCode(totpCode(secret, clock.now()))),
    ).rejects.toMatchObject({ code: ErrorCode.SECOND_FACTOR_INVALID });
    expect(await liveSessions(member)).toEqual([sid, other].sort());
    expect(await storedRecoveryCodes(member)).toBe(0);
    expect((await settings.overview(member, sid)).totp.enabled).toBe(false);
  });

  it('removes the app only after a step-up; the last factor gone, the recovery codes go with it', async () => {
    const member = await newMember();
    await enrolTotp(app.app, member, clock.now());
    const plain = await sessionOf(member, PASSWORD_ONLY);
    await expect(settings.disableTotp(requesterOf(member, plain))).rejects.toMatchObject({
      code: ErrorCode.STEP_UP_REQUIRED,
    });
    expect((await settings.overview(member, plain)).totp.enabled).toBe(true);

    const stepped = await sessionOf(member, WITH_APP);
    await settings.disableTotp(requesterOf(member, stepped));
    expect(await storedRecoveryCodes(member)).toBe(0);
    expect(await liveSessions(member)).toEqual([stepped]);
    expect((await factorChanges(member)).at(-1)).toEqual({ change: 'totp_disabled' });
    // Without a factor nothing asks for a step-up, and there is no app to remove.
    await expect(settings.disableTotp(requesterOf(member, stepped))).rejects.toMatchObject({
      code: ErrorCode.CONFLICT,
    });
  });

  it('removes one of two factors after a step-up with the strongest, keeping the recovery codes; an unknown passkey is not found', async () => {
    const member = await newMember();
    await enrolTotp(app.app, member, clock.now());
    const { passkey } = await addPasskey(app.app, member);
    await expect(
      settings.removePasskey(requesterOf(member, await sessionOf(member, WITH_APP)), passkey.id),
    ).rejects.toMatchObject({ code: ErrorCode.STEP_UP_REQUIRED, extras: { details: { required: 'passkey' } } });

    const stepped = requesterOf(member, await sessionOf(member, WITH_PASSKEY));
    await settings.removePasskey(stepped, passkey.id);
    expect(await settings.listPasskeys(member)).toEqual([]);
    expect(await storedRecoveryCodes(member)).toBe(10);
    await expect(settings.removePasskey(stepped, passkey.id)).rejects.toMatchObject({ code: ErrorCode.NOT_FOUND });
  });

  it("renames only the member's own passkeys", async () => {
    const member = await newMember();
    const { passkey } = await addPasskey(app.app, member);
    const other = await newMember();
    await expect(settings.renamePasskey(other, passkey.id, 'Mine now')).rejects.toMatchObject({
      code: ErrorCode.NOT_FOUND,
    });
    expect(await settings.renamePasskey(member, passkey.id, 'Desk')).toEqual({ ...passkey, name: 'Desk' });
    expect((await settings.listPasskeys(member)).map((p) => p.name)).toEqual(['Desk']);
  });

  it('makes new recovery codes only for a member with a factor and after a step-up; the old ones stop working', async () => {
    const without = await newMember();
    await expect(
      settings.regenerateRecoveryCodes(requesterOf(without, await sessionOf(without, PASSWORD_ONLY))),
    ).rejects.toMatchObject({ code: ErrorCode.CONFLICT });

    const member = await newMember();
    const { recoveryCodes } = await enrolTotp(app.app, member, clock.now());
    await expect(
      settings.regenerateRecoveryCodes(requesterOf(member, await sessionOf(member, PASSWORD_ONLY))),
    ).rejects.toMatchObject({ code: ErrorCode.STEP_UP_REQUIRED });
    const fresh = await settings.regenerateRecoveryCodes(requesterOf(member, await sessionOf(member, WITH_APP)));
    expect(fresh).toHaveLength(10);
    expect(fresh).not.toContain(recoveryCodes![0]);
    const recovery = app.app.get(RecoveryCodesService);
    expect(await recovery.use(member.id, recoveryCodes![0])).toBeNull();
    expect(await recovery.use(member.id, fresh[0])).toBe(9);
    expect((await factorChanges(member)).at(-1)).toEqual({ change: 'recovery_codes_regenerated' });
  });
});
