import { RunningApp, startMembership } from '../../../../test/support/apps';
import { queryRows } from '../../../../test/support/database';
import { clientFacts } from '../../../../test/membership/client-facts';
import { Member } from '../members/member.entity';
import { MembersService } from '../members/members.service';
import { RECOVERY_CODE_COUNT, RecoveryCodesService } from './recovery-codes.service';
import { memberActing } from './requester';

// The real service on a real database: codes made, stored as keyed hashes, used once.
describe('RecoveryCodesService: single-use recovery codes', () => {
  let app: RunningApp;
  let recovery: RecoveryCodesService;
  let run = 0;

  const newMember = (): Promise<Member> =>
    app.app.get(MembersService).create({ username: `recovery_spec_${++run}` }, { method: 'password' });
  const auditedChanges = async (member: Member) =>
    (
      await queryRows(
        app.dbUrl,
        `SELECT after FROM audit_log WHERE action = 'member.factor_changed' AND target_id = $1`,
        [member.id],
      )
    ).map((r) => r.after.change);

  beforeAll(async () => {
    app = await startMembership({ LOG_LEVEL: 'silent' });
    recovery = app.app.get(RecoveryCodesService);
  });
  afterAll(() => app?.close());

  it('makes ten distinct codes easy to read off paper, and stores only their hashes', async () => {
    const member = await newMember();
    const codes = await recovery.regenerate(member.id);
    expect(codes).toHaveLength(RECOVERY_CODE_COUNT);
    expect(new Set(codes).size).toBe(RECOVERY_CODE_COUNT);
    for (const code of codes) expect(code).toMatch(/^[a-hjkmnp-z2-9]{4}-[a-hjkmnp-z2-9]{4}-[a-hjkmnp-z2-9]{2}$/);
    const stored = await queryRows(app.dbUrl, `SELECT code_hash FROM member_recovery_codes WHERE member_id = $1`, [
      member.id,
    ]);
    expect(stored).toHaveLength(RECOVERY_CODE_COUNT);
    const hashes = stored.map((r) => r.code_hash).join(' ');
    for (const code of codes) expect(hashes).not.toContain(code.replace(/-/g, ''));
  });

  it('uses a code once, answering how many are left, whatever its case, spaces and dashes', async () => {
    const member = await newMember();
    const codes = await recovery.regenerate(member.id);
    expect(await recovery.use(member.id, codes[0])).toBe(9);
    expect(await recovery.use(member.id, codes[0])).toBeNull();
    expect(await recovery.use(member.id, ` ${codes[1].toUpperCase().replace(/-/g, ' ')} `)).toBe(8);
    expect(await recovery.use(member.id, codes[2].replace(/-/g, ''))).toBe(7);
    expect(await recovery.use(member.id, codes[1])).toBeNull();
  });

  it("refuses another member's code, a code with a character changed, and anything not ten characters long", async () => {
    const member = await newMember();
    const other = await newMember();
    const [code] = await recovery.regenerate(member.id);
    await recovery.regenerate(other.id);
    expect(await recovery.use(other.id, code)).toBeNull();
    const changed = `${code[0] === 'a' ? 'b' : 'a'}${code.slice(1)}`;
    expect(await recovery.use(member.id, changed)).toBeNull();
    expect(await recovery.use(member.id, `${code}a`)).toBeNull();
    expect(await recovery.use(member.id, '')).toBeNull();
    // None of those used it up.
    expect(await recovery.use(member.id, code)).toBe(9);
  });

  it('counts down to none left', async () => {
    const member = await newMember();
    const codes = await recovery.regenerate(member.id);
    const left: (number | null)[] = [];
    for (const code of codes) left.push(await recovery.use(member.id, code));
    expect(left).toEqual([9, 8, 7, 6, 5, 4, 3, 2, 1, 0]);
  });

  it('hands a code to only one of two concurrent uses', async () => {
    const member = await newMember();
    const [code] = await recovery.regenerate(member.id);
    const results = await Promise.all([recovery.use(member.id, code), recovery.use(member.id, code)]);
    expect(results.filter((left) => left !== null)).toEqual([9]);
  });

  it('replaces every code when made again (old ones stop working), audited only when the member asked for new ones', async () => {
    const member = await newMember();
    const first = await recovery.regenerate(member.id);
    expect(await auditedChanges(member)).toEqual([]);
    const second = await recovery.regenerate(member.id, {
      ctx: memberActing(member.id, clientFacts()),
      memberId: member.id,
      change: 'recovery_codes_regenerated',
    });
    expect(await auditedChanges(member)).toEqual(['recovery_codes_regenerated']);
    expect(await recovery.use(member.id, first[0])).toBeNull();
    expect(await recovery.use(member.id, second[0])).toBe(9);
  });
});
