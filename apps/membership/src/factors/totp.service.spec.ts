import { ErrorCode } from '@app/envelope';
import { RunningApp, startMembership } from '../../../../test/support/apps';
import { queryRows } from '../../../../test/support/database';
import { clientFacts } from '../../../../test/membership/client-facts';
import { midStepClock, otherCode, TOTP_STEP_MS, totpCode } from '../../../../test/membership/totp';
import { Member } from '../members/member.entity';
import { MembersService } from '../members/members.service';
import { FactorChange, FactorChangeRecord } from './factor-change';
import { memberActing } from './requester';
import { TotpService } from './totp.service';

// The real service on a real database, with the app's clock moved instead of waiting for the next TOTP step.
describe('TotpService: enrolment, codes used once, removal', () => {
  const clock = midStepClock();
  let app: RunningApp;
  let totp: TotpService;
  let run = 0;

  const newMember = (): Promise<Member> =>
    app.app.get(MembersService).create({ username: `totp_spec_${++run}` }, { method: 'password' });
  const recordOf = (member: Member, change: FactorChange): FactorChangeRecord => ({
    ctx: memberActing(member.id, clientFacts()),
    memberId: member.id,
    change,
  });
  const changesOf = async (member: Member) =>
    (
      await queryRows(
        app.dbUrl,
        `SELECT after FROM audit_log WHERE action = 'member.factor_changed' AND target_id = $1 ORDER BY id`,
        [member.id],
      )
    ).map((r) => r.after.change);
  /** A member with a confirmed secret, confirmed with the code of the current step. */
  const enrolled = async () => {
    const member = await newMember();
    const { secret } = await totp.begin(member.id, member.username, 'Spec Site');
    await totp.confirm(member.id, totpCode(secret, clock.now()), recordOf(member, 'totp_enabled'));
    return { member, secret };
  };

  beforeAll(async () => {
    app = await startMembership({ LOG_LEVEL: 'silent' }, { clock });
    totp = app.app.get(TotpService);
  });
  afterAll(() => app?.close());

  it('begins with a fresh secret stored sealed and pending, named for the site and account in the otpauth URI and QR image', async () => {
    const member = await newMember();
    const begun = await totp.begin(member.id, member.username, 'Spec Site');
    expect(begun.secret).toMatch(/^[A-Z2-7]{32}$/);
    const uri = new URL(begun.otpauthUri);
    expect([uri.protocol, uri.host, decodeURIComponent(uri.pathname)]).toEqual([
      'otpauth:',
      'totp',
      `/Spec Site:${member.username}`,
    ]);
    expect(Object.fromEntries(uri.searchParams)).toMatchObject({ issuer: 'Spec Site', secret: begun.secret });
    expect(begun.qrDataUrl).toMatch(/^data:image\/png;base64,iVBORw0KGgo/);
    const [row] = await queryRows(
      app.dbUrl,
      `SELECT secret_sealed, confirmed_time FROM member_totp WHERE member_id = $1`,
      [member.id],
    );
    expect(row.confirmed_time).toBeNull();
    expect(row.secret_sealed).not.toContain(begun.secret);
    // A pending secret answers no sign-in.
    expect(await totp.verify(member.id, totpCode(begun.secret, clock.now()))).toBe(false);
  });

  it('confirms the pending secret with a code of the current step, audited as totp_enabled, and uses that step up', async () => {
    const { member, secret } = await enrolled();
    const [row] = await queryRows(app.dbUrl, `SELECT confirmed_time FROM member_totp WHERE member_id = $1`, [
      member.id,
    ]);
    expect(row.confirmed_time).toEqual(new Date(clock.now()));
    expect(await changesOf(member)).toEqual(['totp_enabled']);
    expect(await totp.verify(member.id, totpCode(secret, clock.now()))).toBe(false);
    clock.advance(TOTP_STEP_MS);
    expect(await totp.verify(member.id, totpCode(secret, clock.now()))).toBe(true);
  });

  it('refuses a wrong first code and keeps the secret pending; refuses to confirm when nothing is pending', async () => {
    const member = await newMember();
    const { secret } = await totp.begin(member.id, member.username, 'Spec Site');
    const code = totpCode(secret, clock.now());
    await expect(totp.confirm(member.id, otherCode(code), recordOf(member, 'totp_enabled'))).rejects.toMatchObject({
      code: ErrorCode.SECOND_FACTOR_INVALID,
    });
    expect(await changesOf(member)).toEqual([]);
    await totp.confirm(member.id, code, recordOf(member, 'totp_enabled'));
    await expect(totp.confirm(member.id, code, recordOf(member, 'totp_enabled'))).rejects.toMatchObject({
      code: ErrorCode.CONFLICT,
    });
    const never = await newMember();
    await expect(totp.confirm(never.id, code, recordOf(never, 'totp_enabled'))).rejects.toMatchObject({
      code: ErrorCode.CONFLICT,
    });
  });

  it('replaces a pending secret when begun again: codes of the first no longer confirm', async () => {
    const member = await newMember();
    const first = await totp.begin(member.id, member.username, 'Spec Site');
    const second = await totp.begin(member.id, member.username, 'Spec Site');
    expect(second.secret).not.toBe(first.secret);
    await expect(
      totp.confirm(member.id, totpCode(first.secret, clock.now()), recordOf(member, 'totp_enabled')),
    ).rejects.toMatchObject({ code: ErrorCode.SECOND_FACTOR_INVALID });
    await totp.confirm(member.id, totpCode(second.secret, clock.now()), recordOf(member, 'totp_enabled'));
  });

  it('refuses to begin again once a secret is confirmed, which keeps working', async () => {
    const { member, secret } = await enrolled();
    await expect(totp.begin(member.id, member.username, 'Spec Site')).rejects.toMatchObject({
      code: ErrorCode.CONFLICT,
    });
    clock.advance(TOTP_STEP_MS);
    expect(await totp.verify(member.id, totpCode(secret, clock.now()))).toBe(true);
  });

  it('accepts a code once, and no code of a step at or before the last one used, even inside the drift window', async () => {
    const { member, secret } = await enrolled();
    clock.advance(TOTP_STEP_MS);
    const at = (steps: number) => totpCode(secret, clock.now() + steps * TOTP_STEP_MS);
    expect(await totp.verify(member.id, at(2))).toBe(false);
    expect(await totp.verify(member.id, at(0))).toBe(true);
    expect(await totp.verify(member.id, at(0))).toBe(false);
    // The step before is inside the drift window but was used at enrolment.
    expect(await totp.verify(member.id, at(-1))).toBe(false);
    // A phone a step ahead: accepted, and then the current step is behind the last used one.
    expect(await totp.verify(member.id, at(1))).toBe(true);
    clock.advance(TOTP_STEP_MS);
    expect(await totp.verify(member.id, at(0))).toBe(false);
  });

  it('accepts only six digits as they are', async () => {
    const { member, secret } = await enrolled();
    clock.advance(TOTP_STEP_MS);
    const code = totpCode(secret, clock.now());
    for (const malformed of [` ${code}`, `${code}0`, code.slice(1), `${code.slice(0, 3)}-${code.slice(3)}`]) {
      expect({ malformed, accepted: await totp.verify(member.id, malformed) }).toEqual({ malformed, accepted: false });
    }
    expect(await totp.verify(member.id, code)).toBe(true);
  });

  it("gives no codes from a sealed secret copied to another member's row (the member id is bound to it)", async () => {
    const { member, secret } = await enrolled();
    const other = await newMember();
    await queryRows(
      app.dbUrl,
      `INSERT INTO member_totp (member_id, secret_sealed, confirmed_time, last_step)
       SELECT $2, secret_sealed, confirmed_time, -1 FROM member_totp WHERE member_id = $1`,
      [member.id, other.id],
    );
    clock.advance(TOTP_STEP_MS);
    const code = totpCode(secret, clock.now());
    expect(await totp.verify(other.id, code)).toBe(false);
    expect(await totp.verify(member.id, code)).toBe(true);
  });

  it('removes a confirmed secret once, audited as totp_disabled; a pending one is not a factor to remove', async () => {
    const { member, secret } = await enrolled();
    expect(await totp.disable(member.id, recordOf(member, 'totp_disabled'))).toBe(true);
    expect(await totp.disable(member.id, recordOf(member, 'totp_disabled'))).toBe(false);
    clock.advance(TOTP_STEP_MS);
    expect(await totp.verify(member.id, totpCode(secret, clock.now()))).toBe(false);
    expect(await changesOf(member)).toEqual(['totp_enabled', 'totp_disabled']);

    const pending = await newMember();
    await totp.begin(pending.id, pending.username, 'Spec Site');
    expect(await totp.disable(pending.id, recordOf(pending, 'totp_disabled'))).toBe(false);
    expect(await changesOf(pending)).toEqual([]);
  });
});
