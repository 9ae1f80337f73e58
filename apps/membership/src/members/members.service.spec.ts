import { cliContext, systemContext } from '@app/audit';
import { ErrorCode } from '@app/envelope';
import { WebhookEndpointsService } from '@app/webhooks';
import { RunningApp, startMembership } from '../../../../test/support/apps';
import { queryRows } from '../../../../test/support/database';
import { PasswordHasher } from '../security/password-hasher';
import { MembersService } from './members.service';

// The real use case on a real database; member.registered events are stored for a subscribed endpoint
// (no delivery worker), so what each sign-up announces can be read back.
describe('MembersService: member records', () => {
  let app: RunningApp;
  let members: MembersService;
  let seq = 0;
  const name = (prefix: string) => `${prefix}_${++seq}`;
  const phone = () => `1391234${String(++seq).padStart(4, '0')}`;
  const count = async () => (await queryRows(app.dbUrl, `SELECT count(*)::int AS n FROM members`))[0].n as number;

  beforeAll(async () => {
    app = await startMembership({
      LOG_LEVEL: 'silent',
      WEBHOOK_WORKER: 'false',
      WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32',
    });
    members = app.app.get(MembersService);
    await app.app
      .get(WebhookEndpointsService)
      .create({ url: 'http://127.0.0.1:9/hook', events: ['member.registered'] }, systemContext());
  });
  afterAll(() => app?.close());

  it('signs up with a generated username, a normalized email as an unproven claim and an argon2id hash; the event names no contact', async () => {
    const member = await members.create(
      { email: '  New.Member@Example.COM ', phone: phone(), password: 'a member password', nickname: 'New' },
      { method: 'password' },
    );
    expect(member).toMatchObject({
      username: expect.stringMatching(/^m_[A-Za-z0-9]{12}$/),
      email: 'new.member@example.com',
      emailVerifiedTime: null,
      phoneVerifiedTime: null,
      roles: [],
      status: 'active',
    });
    expect(member.passwordHash).toMatch(/^\$argon2id\$/);
    expect((await app.app.get(PasswordHasher).verify(member.passwordHash, 'a member password')).ok).toBe(true);
    const events = await queryRows(
      app.dbUrl,
      `SELECT payload->'data' AS data FROM webhook_events WHERE type = 'member.registered' AND payload->'data'->>'member_id' = $1`,
      [member.id],
    );
    expect(events.map((e) => e.data)).toEqual([
      {
        member_id: member.id,
        username: member.username,
        nickname: 'New',
        method: 'password',
        registered_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      },
    ]);
  });

  it('finds a login account by username (any case), then by email when it has an @, then by phone', async () => {
    const byPhone = await members.create({ username: name('mb_find'), phone: phone() }, { method: 'password' });
    // A username that is another member's phone number: the username wins.
    const named = await members.create(
      { username: byPhone.phone, email: `Found${seq}@example.com` },
      { method: 'password' },
    );
    expect((await members.findByAccount(byPhone.username.toUpperCase()))?.id).toBe(byPhone.id);
    expect((await members.findByAccount(byPhone.phone!))?.id).toBe(named.id);
    expect((await members.findByAccount(named.email!.toUpperCase()))?.id).toBe(named.id);
    expect(await members.findByAccount('nobody@example.com')).toBeNull();
  });

  it('refuses a taken username (any case), a claimed email or phone without proof, and a verified one even with proof', async () => {
    const holder = await members.create(
      { username: name('mb_taken'), email: `taken${seq}@example.com`, phone: phone() },
      { method: 'password' },
    );
    const verified = await members.create(
      { username: name('mb_verified'), phone: phone(), phoneProven: true },
      {
        method: 'phone_code',
      },
    );
    const before = await count();
    for (const [input, field] of [
      [{ username: holder.username.toUpperCase() }, 'username'],
      [{ email: holder.email!.toUpperCase() }, 'email'],
      [{ phone: holder.phone }, 'phone'],
      [{ phone: verified.phone, phoneProven: true }, 'phone'],
    ] as const)
      await expect(members.create(input, { method: 'password' })).rejects.toMatchObject({
        code: ErrorCode.ALREADY_TAKEN,
        extras: { details: { field } },
      });
    expect(await count()).toBe(before);
  });

  it("a proven address is stored verified and taken back from another member's unproven claim", async () => {
    const claimant = await members.create(
      { username: name('mb_claim'), email: `claimed${seq}@example.com`, phone: phone() },
      { method: 'password' },
    );
    const owner = await members.create(
      {
        username: name('mb_owner'),
        email: claimant.email,
        emailProven: true,
        phone: claimant.phone,
        phoneProven: true,
      },
      { method: 'password' },
    );
    expect(owner.emailVerifiedTime).not.toBeNull();
    expect(owner.phoneVerifiedTime).not.toBeNull();
    expect(await members.findById(claimant.id)).toMatchObject({ email: null, phone: null });
  });

  it("binds a proven contact to a member, taking it from an unproven claim; another member's verified one is refused", async () => {
    const member = await members.create({ username: name('mb_bind') }, { method: 'password' });
    const email = `bind${seq}@example.com`;
    const claimant = await members.create({ username: name('mb_bind'), email }, { method: 'password' });
    await members.bindProvenContact(member.id, 'email', `  ${email.toUpperCase()}`);
    expect(await members.findById(member.id)).toMatchObject({
      email,
      emailVerifiedTime: expect.any(Date),
    });
    expect((await members.findById(claimant.id))?.email).toBeNull();

    const third = await members.create({ username: name('mb_bind') }, { method: 'password' });
    await expect(members.bindProvenContact(third.id, 'email', email)).rejects.toMatchObject({
      code: ErrorCode.ALREADY_TAKEN,
      extras: { details: { field: 'email' } },
    });
    expect((await members.findById(third.id))?.email).toBeNull();
  });

  it("updates the profile: null or absent keeps a value, '' clears it", async () => {
    const member = await members.create({ username: name('mb_profile'), nickname: 'Nick' }, { method: 'password' });
    await members.updateProfile(member.id, {
      avatarUrl: '/files/2026/11/a.png',
      gender: 'female',
      birthDate: '1990-02-03',
    });
    const updated = await members.updateProfile(member.id, { nickname: null, avatarUrl: null, gender: '' });
    expect(updated).toMatchObject({
      nickname: 'Nick',
      avatarUrl: '/files/2026/11/a.png',
      gender: null,
      birthDate: '1990-02-03',
    });
  });

  it('replaces a password only over the hash the caller verified; an operator reset is recorded with its context', async () => {
    const member = await members.create(
      { username: name('mb_password'), password: 'first password' },
      {
        method: 'password',
      },
    );
    const verified = member.passwordHash;
    const replaced = await members.replacePassword(member.id, verified, 'second password');
    expect(replaced).toMatch(/^\$argon2id\$/);
    // A caller that checked the first password is too late now.
    expect(await members.replacePassword(member.id, verified, 'third password')).toBeNull();
    expect((await members.findById(member.id))?.passwordHash).toBe(replaced);

    await members.resetPassword(member.id, 'reset password', cliContext('operator'));
    const stored = (await members.findById(member.id))!.passwordHash;
    expect((await app.app.get(PasswordHasher).verify(stored, 'reset password')).ok).toBe(true);
    expect(
      await queryRows(app.dbUrl, `SELECT actor_kind, actor_id, action FROM audit_log WHERE target_id = $1`, [
        member.id,
      ]),
    ).toEqual([{ actor_kind: 'cli', actor_id: 'operator', action: 'member.password_reset' }]);
  });
});
