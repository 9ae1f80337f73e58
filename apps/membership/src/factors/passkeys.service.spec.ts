import type { AuthenticationResponseJSON } from '@simplewebauthn/server';
import { ErrorCode } from '@app/envelope';
import { RunningApp, startMembership } from '../../../../test/support/apps';
import { FakeClock } from '../../../../test/support/clock';
import { queryRows } from '../../../../test/support/database';
import { clientFacts } from '../../../../test/membership/client-facts';
import {
  AuthenticatorTraits,
  rsaKey,
  rsaPublicKey,
  SoftwareAuthenticator,
  WEBAUTHN_ENV,
} from '../../../../test/membership/software-authenticator';
import { Member } from '../members/member.entity';
import { MembersService } from '../members/members.service';
import { FactorChange, FactorChangeRecord } from './factor-change';
import { FactorsRepository } from './factors.repository';
import {
  knownTransports,
  MAX_PASSKEY_PUBLIC_KEY_BYTES,
  MAX_PASSKEYS_PER_MEMBER,
  MemberAssertionPurpose,
  PasskeysService,
} from './passkeys.service';
import { memberActing } from './requester';

// The real service on a real database and shared state, answered by a software authenticator
// (test/membership/software-authenticator.ts) with what a browser would send.
describe('PasskeysService: registration and assertions', () => {
  const clock = new FakeClock();
  let app: RunningApp;
  let passkeys: PasskeysService;
  let run = 0;

  const newMember = (): Promise<Member> =>
    app.app.get(MembersService).create({ username: `passkey_spec_${++run}` }, { method: 'password' });
  const recordOf = (member: Member, change: FactorChange): FactorChangeRecord => ({
    ctx: memberActing(member.id, clientFacts()),
    memberId: member.id,
    change,
  });
  const optionsFor = (member: Member) =>
    passkeys.registrationOptions(member.id, member.username, `${member.username} display`, 'Spec Site');
  /** A member's passkey on a new authenticator, registered through the service. */
  const registered = async (member: Member, traits: Partial<AuthenticatorTraits> = {}) => {
    const authenticator = new SoftwareAuthenticator(traits);
    const credential = authenticator.register(await optionsFor(member));
    const passkey = await passkeys.register(member.id, credential, 'Laptop', recordOf(member, 'passkey_added'));
    return { authenticator, passkey };
  };
  const secondFactor = (member: Member, bind = 'challenge-1'): MemberAssertionPurpose => ({
    kind: 'second-factor',
    memberId: member.id,
    bind,
  });
  /** The authenticator's answer to options issued for `purpose`. */
  const answer = async (
    authenticator: SoftwareAuthenticator,
    purpose: Parameters<PasskeysService['authenticationOptions']>[0],
  ): Promise<AuthenticationResponseJSON> => authenticator.assert(await passkeys.authenticationOptions(purpose));
  const storedPasskeys = (member: Member) =>
    queryRows(
      app.dbUrl,
      `SELECT sign_count::int AS "signCount", last_used_time AS "lastUsedTime" FROM member_passkeys WHERE member_id = $1`,
      [member.id],
    );

  beforeAll(async () => {
    app = await startMembership({ LOG_LEVEL: 'silent', ...WEBAUTHN_ENV }, { clock });
    passkeys = app.app.get(PasskeysService);
  });
  afterAll(() => app?.close());

  it('offers registration options for the site and the member, excluding the passkeys the member already has', async () => {
    const member = await newMember();
    const options = await optionsFor(member);
    expect(options).toMatchObject({
      rp: { name: 'Spec Site', id: 'members.example.test' },
      user: {
        id: Buffer.from(`m:${member.id}`).toString('base64url'),
        name: member.username,
        displayName: `${member.username} display`,
      },
      timeout: 300_000,
      excludeCredentials: [],
      authenticatorSelection: { residentKey: 'required', userVerification: 'preferred' },
    });
    const { authenticator } = await registered(member);
    expect((await optionsFor(member)).excludeCredentials).toEqual([
      { id: authenticator.credentialId, type: 'public-key', transports: ['internal'] },
    ]);
  });

  it('stores a verified passkey with its counter, transports and backup state, audited as passkey_added with its id and name', async () => {
    const member = await newMember();
    const bound = await registered(member);
    expect(bound.passkey).toMatchObject({
      memberId: member.id,
      credentialId: bound.authenticator.credentialId,
      signCount: 0,
      transports: ['internal'],
      deviceType: 'singleDevice',
      backedUp: false,
      name: 'Laptop',
      lastUsedTime: null,
    });
    expect(bound.passkey.publicKey.length).toBeGreaterThan(64);
    const synced = await registered(member, { backedUp: true });
    expect(synced.passkey).toMatchObject({ deviceType: 'multiDevice', backedUp: true });
    expect((await passkeys.list(member.id)).map((p) => p.id)).toEqual([bound.passkey.id, synced.passkey.id]);
    const audited = await queryRows(
      app.dbUrl,
      `SELECT after FROM audit_log WHERE action = 'member.factor_changed' AND target_id = $1 ORDER BY id`,
      [member.id],
    );
    expect(audited.map((r) => r.after)).toEqual([
      { change: 'passkey_added', passkey: { id: bound.passkey.id, name: 'Laptop' } },
      { change: 'passkey_added', passkey: { id: synced.passkey.id, name: 'Laptop' } },
    ]);
  });

  it('stores only the transports WebAuthn defines, each once (the client sends them unsigned)', async () => {
    expect(knownTransports(['usb', 'bogus', 'usb', 'internal', 1, null, 'x'.repeat(100)])).toEqual(['usb', 'internal']);
    expect(knownTransports(undefined)).toEqual([]);
    expect(knownTransports('usb')).toEqual([]);
    const member = await newMember();
    const authenticator = new SoftwareAuthenticator();
    const credential = authenticator.register(await optionsFor(member));
    credential.response.transports = [
      ...Array.from({ length: 5000 }, (_, i) => `t${i}`),
      'hybrid',
      'internal',
      'hybrid',
    ] as never;
    const passkey = await passkeys.register(member.id, credential, 'Phone', recordOf(member, 'passkey_added'));
    expect(passkey.transports).toEqual(['hybrid', 'internal']);
  });

  it('refuses a public key padded past its size (an unknown COSE label of 8 KB), and takes a real one', async () => {
    const member = await newMember();
    await expect(registered(member, { coseExtra: Buffer.alloc(8192, 1) })).rejects.toMatchObject({
      code: ErrorCode.PASSKEY_REGISTRATION_FAILED,
      message: expect.stringContaining(`larger than ${MAX_PASSKEY_PUBLIC_KEY_BYTES} bytes`),
    });
    expect(await passkeys.list(member.id)).toHaveLength(0);
    await registered(member, { coseExtra: Buffer.alloc(64, 1) });
    expect(await passkeys.list(member.id)).toHaveLength(1);
  });

  it('takes an RS256 passkey with e = 65537 and a 2048-bit modulus (as Windows Hello makes), and verifies its assertions', async () => {
    const member = await newMember();
    const { authenticator, passkey } = await registered(member, { key: rsaKey() });
    expect(passkey.publicKey.length).toBeGreaterThan(256);
    expect(
      await passkeys.verifyAssertion(await answer(authenticator, secondFactor(member)), secondFactor(member)),
    ).toMatchObject({ passkey: { id: passkey.id } });
    // 4096 bits is taken too (a key that only registers: nothing signs at registration with attestation 'none').
    await registered(member, { key: rsaPublicKey(4096) });
    expect(await passkeys.list(member.id)).toHaveLength(2);
  });

  it('refuses an RSA passkey whose public exponent is not 65537 or whose modulus is not 2048 to 4096 bits', async () => {
    const member = await newMember();
    const keys = [
      rsaKey({ exponent: 3 }),
      rsaKey({ exponent: 2 ** 31 - 1 }),
      rsaKey({ exponent: 'huge' }),
      rsaPublicKey(8192),
      rsaKey({ bits: 1024 }),
    ];
    const outcomes: unknown[] = [];
    for (const key of keys)
      outcomes.push(
        await registered(member, { key }).then(
          () => 'registered',
          (err: { code: ErrorCode; message: string }) => ({ code: err.code, message: err.message }),
        ),
      );
    const refused = (reason: string) => ({
      code: ErrorCode.PASSKEY_REGISTRATION_FAILED,
      message: expect.stringContaining(reason),
    });
    expect(outcomes).toEqual([
      refused('its RSA public exponent is not 65537'),
      refused('its RSA public exponent is not 65537'),
      refused('its RSA public exponent is not 65537'),
      refused('its RSA modulus has 8192 bits, not 2048 to 4096'),
      refused('its RSA modulus has 1024 bits, not 2048 to 4096'),
    ]);
    expect(await passkeys.list(member.id)).toHaveLength(0);
  });

  it('refuses an unfit RSA key before verifying anything else of the registration (an attestation signed with it would cost a verification)', async () => {
    const member = await newMember();
    const authenticator = new SoftwareAuthenticator({ key: rsaKey({ exponent: 'huge' }) });
    const credential = authenticator.register(await optionsFor(member));
    // Answering a challenge never issued: a verification would refuse it for that, were it run first.
    const client = JSON.parse(Buffer.from(credential.response.clientDataJSON, 'base64url').toString('utf8'));
    credential.response.clientDataJSON = Buffer.from(
      JSON.stringify({ ...client, challenge: 'bm90LWlzc3VlZA' }),
    ).toString('base64url');
    await expect(
      passkeys.register(member.id, credential, 'Laptop', recordOf(member, 'passkey_added')),
    ).rejects.toMatchObject({
      code: ErrorCode.PASSKEY_REGISTRATION_FAILED,
      message: expect.stringContaining('its RSA public exponent is not 65537'),
    });
  });

  it('never verifies an assertion of an RSA passkey stored with a huge exponent (registered before it was refused)', async () => {
    const member = await newMember();
    const authenticator = new SoftwareAuthenticator({ key: rsaKey({ exponent: 'huge' }) });
    const stored = await app.app.get(FactorsRepository).insertPasskey(
      {
        memberId: member.id,
        credentialId: authenticator.credentialId,
        publicKey: Buffer.from(authenticator.publicKey()),
        signCount: 0,
        transports: ['internal'],
        deviceType: 'singleDevice',
        backedUp: false,
        name: 'Old key',
      },
      recordOf(member, 'passkey_added'),
      MAX_PASSKEYS_PER_MEMBER,
    );
    expect(stored).toMatchObject({ credentialId: authenticator.credentialId });
    // A good signature by that key: refused for the key alone.
    expect(
      await passkeys.verifyAssertion(await answer(authenticator, secondFactor(member)), secondFactor(member)),
    ).toBeNull();
    expect(await storedPasskeys(member)).toEqual([{ signCount: 0, lastUsedTime: null }]);
  });

  it(`keeps at most ${MAX_PASSKEYS_PER_MEMBER} passkeys per member: no options past them, and a registration racing to pass them is refused`, async () => {
    const member = await newMember();
    for (let i = 0; i < MAX_PASSKEYS_PER_MEMBER - 2; i++) await registered(member);
    // Two registrations begun while the member had room for both; then a third, begun with room for one.
    const a = new SoftwareAuthenticator();
    const b = new SoftwareAuthenticator();
    const c = new SoftwareAuthenticator();
    const [ca, cb, cc] = [
      a.register(await optionsFor(member)),
      b.register(await optionsFor(member)),
      c.register(await optionsFor(member)),
    ];
    const results = await Promise.allSettled(
      [ca, cb, cc].map((cred) => passkeys.register(member.id, cred, 'Key', recordOf(member, 'passkey_added'))),
    );
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(2);
    const refused = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
    expect(refused.reason).toMatchObject({ code: ErrorCode.PASSKEY_REGISTRATION_FAILED });
    expect(String((refused.reason as Error).message)).toContain(`at most ${MAX_PASSKEYS_PER_MEMBER} passkeys`);
    expect(await passkeys.list(member.id)).toHaveLength(MAX_PASSKEYS_PER_MEMBER);
    await expect(optionsFor(member)).rejects.toMatchObject({ code: ErrorCode.PASSKEY_REGISTRATION_FAILED });
  });

  it("refuses a registration answering another member's challenge, a used challenge, or from another origin", async () => {
    const member = await newMember();
    const other = await newMember();
    const refused = { code: ErrorCode.PASSKEY_REGISTRATION_FAILED };
    const record = recordOf(member, 'passkey_added');

    const othersChallenge = new SoftwareAuthenticator().register(await optionsFor(other));
    await expect(passkeys.register(member.id, othersChallenge, 'Laptop', record)).rejects.toMatchObject(refused);
    // Taken by that attempt: not even its own member can use it now.
    await expect(
      passkeys.register(other.id, othersChallenge, 'Laptop', recordOf(other, 'passkey_added')),
    ).rejects.toMatchObject(refused);

    const options = await optionsFor(member);
    await passkeys.register(member.id, new SoftwareAuthenticator().register(options), 'Laptop', record);
    const again = new SoftwareAuthenticator().register(options);
    await expect(passkeys.register(member.id, again, 'Laptop', record)).rejects.toMatchObject(refused);

    const elsewhere = new SoftwareAuthenticator({ origin: 'https://members.example.test.evil' });
    await expect(
      passkeys.register(member.id, elsewhere.register(await optionsFor(member)), 'Laptop', record),
    ).rejects.toMatchObject(refused);
    expect(await passkeys.list(member.id)).toHaveLength(1);
    expect(await passkeys.list(other.id)).toHaveLength(0);
  });

  it('refuses a passkey that is already registered, also to another member', async () => {
    const member = await newMember();
    const { authenticator } = await registered(member);
    const other = await newMember();
    const credential = authenticator.register(await optionsFor(other));
    await expect(
      passkeys.register(other.id, credential, 'Stolen', recordOf(other, 'passkey_added')),
    ).rejects.toMatchObject({
      code: ErrorCode.PASSKEY_REGISTRATION_FAILED,
      message: expect.stringContaining('already registered'),
    });
    expect(await passkeys.list(other.id)).toEqual([]);
  });

  it("offers assertion options: passwordless lists no passkeys and requires user verification; for a member, lists the member's", async () => {
    const member = await newMember();
    const { authenticator } = await registered(member);
    const passwordless = await passkeys.authenticationOptions({ kind: 'passwordless' });
    expect(passwordless).toMatchObject({
      rpId: 'members.example.test',
      userVerification: 'required',
      timeout: 300_000,
    });
    expect(passwordless.allowCredentials).toBeUndefined();
    const forMember = await passkeys.authenticationOptions(secondFactor(member));
    expect(forMember).toMatchObject({
      userVerification: 'preferred',
      allowCredentials: [{ id: authenticator.credentialId, type: 'public-key', transports: ['internal'] }],
    });
  });

  it('verifies an assertion for the purpose its challenge was issued for, recording the new counter and the time of use', async () => {
    const member = await newMember();
    const { authenticator, passkey } = await registered(member);
    const verified = await passkeys.verifyAssertion(
      await answer(authenticator, secondFactor(member)),
      secondFactor(member),
    );
    expect(verified).toMatchObject({ passkey: { id: passkey.id }, backedUp: false, userVerified: true });
    expect(await storedPasskeys(member)).toEqual([{ signCount: 1, lastUsedTime: new Date(clock.now()) }]);

    const synced = await registered(member, { backedUp: true });
    const stepUp: MemberAssertionPurpose = { kind: 'step-up', memberId: member.id, bind: 'session-1' };
    expect(await passkeys.verifyAssertion(await answer(synced.authenticator, stepUp), stepUp)).toMatchObject({
      passkey: { id: synced.passkey.id },
      backedUp: true,
    });
    const passwordless = await answer(authenticator, { kind: 'passwordless' });
    expect(await passkeys.verifyAssertion(passwordless, { kind: 'passwordless' })).toMatchObject({
      passkey: { memberId: member.id },
    });
  });

  it('refuses an assertion whose challenge was issued for another purpose or binding, and a replayed one: each challenge is used once', async () => {
    const member = await newMember();
    const { authenticator } = await registered(member);
    const forStepUp = await answer(authenticator, { kind: 'step-up', memberId: member.id, bind: 'challenge-1' });
    expect(await passkeys.verifyAssertion(forStepUp, secondFactor(member, 'challenge-1'))).toBeNull();
    // That attempt used the challenge up: the purpose it was issued for no longer takes it.
    expect(
      await passkeys.verifyAssertion(forStepUp, { kind: 'step-up', memberId: member.id, bind: 'challenge-1' }),
    ).toBeNull();

    const otherBinding = await answer(authenticator, secondFactor(member, 'challenge-2'));
    expect(await passkeys.verifyAssertion(otherBinding, secondFactor(member, 'challenge-3'))).toBeNull();
    const passwordless = await answer(authenticator, { kind: 'passwordless' });
    expect(await passkeys.verifyAssertion(passwordless, secondFactor(member))).toBeNull();

    const good = await answer(authenticator, secondFactor(member));
    expect(await passkeys.verifyAssertion(good, secondFactor(member))).not.toBeNull();
    expect(await passkeys.verifyAssertion(good, secondFactor(member))).toBeNull();
  });

  it("refuses another member's passkey for a member's challenge, and a passwordless sign-in without user verification", async () => {
    const member = await newMember();
    const other = await registered(await newMember());
    expect(
      await passkeys.verifyAssertion(await answer(other.authenticator, secondFactor(member)), secondFactor(member)),
    ).toBeNull();

    // A security key without a PIN: not enough alone, enough as a second factor.
    const bare = await registered(member, { userVerified: false });
    const passwordless = await answer(bare.authenticator, { kind: 'passwordless' });
    expect(await passkeys.verifyAssertion(passwordless, { kind: 'passwordless' })).toBeNull();
    expect(
      await passkeys.verifyAssertion(await answer(bare.authenticator, secondFactor(member)), secondFactor(member)),
    ).toMatchObject({ userVerified: false });
  });

  it('refuses a cloned authenticator: its counter does not grow past the one stored', async () => {
    const member = await newMember();
    const { authenticator } = await registered(member);
    const clone = authenticator.clone();
    for (let i = 0; i < 2; i++) {
      const assertion = await answer(authenticator, secondFactor(member));
      expect(await passkeys.verifyAssertion(assertion, secondFactor(member))).not.toBeNull();
    }
    expect(await passkeys.verifyAssertion(await answer(clone, secondFactor(member)), secondFactor(member))).toBeNull();
    expect(await storedPasskeys(member)).toMatchObject([{ signCount: 2 }]);
  });

  it('refuses an assertion whose challenge expired, and one naming no known passkey', async () => {
    const member = await newMember();
    const { authenticator } = await registered(member);
    const options = await passkeys.authenticationOptions(secondFactor(member));
    // Shared state expires by its store's time (libs/platform/src/shared-state/postgres-shared-state.ts), not the app's Clock.
    await queryRows(app.dbUrl, `UPDATE shared_state SET expires_at = now() - interval '1 second' WHERE key = $1`, [
      `webauthn:challenge:${options.challenge}`,
    ]);
    expect(await passkeys.verifyAssertion(authenticator.assert(options), secondFactor(member))).toBeNull();

    const stranger = await answer(new SoftwareAuthenticator(), secondFactor(member));
    expect(await passkeys.verifyAssertion(stranger, secondFactor(member))).toBeNull();
    expect(await passkeys.verifyAssertion({} as AuthenticationResponseJSON, { kind: 'passwordless' })).toBeNull();
    // The control: a fresh challenge is answered.
    expect(
      await passkeys.verifyAssertion(await answer(authenticator, secondFactor(member)), secondFactor(member)),
    ).not.toBeNull();
  });

  it("renames and removes only the member's own passkeys; a removal is audited with the passkey's id and name", async () => {
    const member = await newMember();
    const { passkey } = await registered(member);
    const other = await newMember();
    expect(await passkeys.rename(other.id, passkey.id, 'Mine now')).toBeNull();
    expect(await passkeys.rename(member.id, 'not-a-uuid', 'Desk')).toBeNull();
    expect(await passkeys.rename(member.id, passkey.id, 'Desk')).toMatchObject({ id: passkey.id, name: 'Desk' });
    expect(await passkeys.remove(other.id, passkey.id, recordOf(other, 'passkey_removed'))).toBeNull();
    expect(await passkeys.remove(member.id, passkey.id, recordOf(member, 'passkey_removed'))).toBe('Desk');
    expect(await passkeys.remove(member.id, passkey.id, recordOf(member, 'passkey_removed'))).toBeNull();
    expect(await passkeys.list(member.id)).toEqual([]);
    const audited = await queryRows(
      app.dbUrl,
      `SELECT target_id, after FROM audit_log WHERE after->>'change' = 'passkey_removed' AND target_id IN ($1, $2)`,
      [member.id, other.id],
    );
    expect(audited).toEqual([
      { target_id: member.id, after: { change: 'passkey_removed', passkey: { id: passkey.id, name: 'Desk' } } },
    ]);
  });
});
