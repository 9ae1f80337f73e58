import { systemContext } from '@app/audit';
import { ErrorCode } from '@app/envelope';
import { WebhookEndpointsService } from '@app/webhooks';
import { RunningApp, startMembership } from '../../../../test/support/apps';
import { queryRows } from '../../../../test/support/database';
import { MembersService } from '../members/members.service';
import { ExternalProfile } from './external-profile';
import { MemberIdentitiesService } from './member-identities.service';

// The real use case on a real database and shared state; member.registered events are stored for a
// subscribed endpoint (no delivery worker), so the registration each first login makes can be read back.
describe('MemberIdentitiesService: external identities to members', () => {
  let app: RunningApp;
  let identities: MemberIdentitiesService;
  let members: MembersService;
  let seq = 0;

  const github = (over: Partial<ExternalProfile> = {}): ExternalProfile => ({
    provider: 'github',
    subject: `gh-${++seq}`,
    registrationId: 'github-app',
    nickname: `octo ${seq}`,
    avatarUrl: `https://avatars.example.com/${seq}.png`,
    ...over,
  });
  const registered = async (memberId: string) =>
    (
      await queryRows(
        app.dbUrl,
        `SELECT payload->'data' AS data FROM webhook_events WHERE type = 'member.registered' AND payload->'data'->>'member_id' = $1`,
        [memberId],
      )
    ).map((r) => r.data);

  beforeAll(async () => {
    app = await startMembership({
      LOG_LEVEL: 'silent',
      WEBHOOK_WORKER: 'false',
      WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32',
    });
    identities = app.app.get(MemberIdentitiesService);
    members = app.app.get(MembersService);
    await app.app
      .get(WebhookEndpointsService)
      .create({ url: 'http://127.0.0.1:9/hook', events: ['member.registered'] }, systemContext());
  });
  afterAll(() => app?.close());

  it('signs up a member on first sight of an identity and logs the same member in afterwards, refreshing the profile', async () => {
    const profile = github({ nickname: 'n'.repeat(200), avatarUrl: `https://a.example.com/${'x'.repeat(1100)}` });
    const first = await identities.resolveForLogin(profile);
    expect(first).toMatchObject({ isNewUser: true, isBound: false });
    // A nickname too long for the member is cut; an avatar URL too long to keep whole is dropped, never cut.
    expect(first.member).toMatchObject({ nickname: 'n'.repeat(64), avatarUrl: null, passwordHash: null });
    expect(first.identity).toMatchObject({
      memberId: first.member.id,
      provider: 'github',
      subject: profile.subject,
      nickname: 'n'.repeat(128),
      avatarUrl: null,
    });
    expect(await registered(first.member.id)).toEqual([
      expect.objectContaining({ method: 'oauth', provider: 'github-app' }),
    ]);

    const again = await identities.resolveForLogin({ ...profile, registrationId: 'github-renamed', nickname: 'Octo' });
    expect(again).toMatchObject({ isNewUser: false, member: { id: first.member.id } });
    expect((await identities.list(first.member.id)).map((i) => [i.registrationId, i.nickname, i.avatarUrl])).toEqual([
      ['github-renamed', 'Octo', null],
    ]);
    expect(await registered(first.member.id)).toHaveLength(1);
  });

  it('joins a WeChat identity to the member of another app with the same unionid, signing up as wechat otherwise', async () => {
    const website = await identities.resolveForLogin(
      github({ provider: 'wechat:wxopen1', registrationId: 'wechat-app', unionId: `union-${seq}` }),
    );
    expect(await registered(website.member.id)).toEqual([
      expect.objectContaining({ method: 'wechat', provider: 'wechat-app' }),
    ]);
    const account = await identities.resolveForLogin(
      github({ provider: 'wechat:wxmp1', registrationId: 'wechat-mp', unionId: website.identity.unionId }),
    );
    expect(account).toMatchObject({ isNewUser: false, member: { id: website.member.id } });
    expect((await identities.list(website.member.id)).map((i) => i.provider)).toEqual([
      'wechat:wxopen1',
      'wechat:wxmp1',
    ]);
  });

  it('creates one member when the first logins of one identity race', async () => {
    const profile = github();
    const results = await Promise.all([1, 2, 3].map(() => identities.resolveForLogin(profile)));
    expect(new Set(results.map((r) => r.member.id)).size).toBe(1);
    expect(results.filter((r) => r.isNewUser)).toHaveLength(1);
    const [{ count }] = await queryRows(app.dbUrl, `SELECT count(*)::int AS count FROM members WHERE nickname = $1`, [
      profile.nickname,
    ]);
    expect(count).toBe(1);
  });

  it('links an identity to a signed-in member, again harmlessly; refuses one another member owns', async () => {
    const owner = (await identities.resolveForLogin(github())).member.id;
    const other = (await identities.resolveForLogin(github())).member.id;
    const profile = github();
    const linked = await identities.link(owner, profile);
    expect(linked).toMatchObject({ memberId: owner, subject: profile.subject });
    expect((await identities.link(owner, { ...profile, nickname: 'relinked' })).id).toBe(linked.id);

    await expect(identities.link(other, profile)).rejects.toMatchObject({
      code: ErrorCode.ALREADY_TAKEN,
      extras: { details: { field: 'identity' } },
    });
    expect((await identities.list(other)).map((i) => i.id)).not.toContain(linked.id);
    expect((await identities.resolveForLogin(profile)).member.id).toBe(owner);
  });

  it("unlinks an identity unless it is the member's last way in; another member's or an unknown one is NOT_FOUND", async () => {
    const profile = github();
    const first = await identities.resolveForLogin(profile);
    const memberId = first.member.id;
    const second = await identities.link(memberId, github());
    const stranger = (await identities.resolveForLogin(github())).member.id;

    for (const [who, id] of [
      [stranger, first.identity.id],
      [memberId, '00000000-0000-4000-8000-000000000000'],
      [memberId, 'not-an-id'],
    ])
      await expect(identities.unlink(who, id)).rejects.toMatchObject({ code: ErrorCode.NOT_FOUND });
    await identities.unlink(memberId, second.id);
    await expect(identities.unlink(memberId, first.identity.id)).rejects.toMatchObject({ code: ErrorCode.CONFLICT });
    expect((await identities.list(memberId)).map((i) => i.id)).toEqual([first.identity.id]);

    // With a password the member has another way in: the identity may go, and logins by it now say "bound".
    await members.setPassword(memberId, 'a member password');
    expect((await identities.resolveForLogin(profile)).isBound).toBe(true);
    await identities.unlink(memberId, first.identity.id);
    expect(await identities.list(memberId)).toEqual([]);
  });
});
