import { randomBytes } from 'node:crypto';
import { RedisSharedState } from '@app/platform';
import { OAuth2StateRepository, QrcodeState, randomState } from './oauth2-state.repository';

// Against real Redis (127.0.0.1:6379); PostgreSQL is covered by the e2e suites.
describe('OAuth2StateRepository', () => {
  let shared: RedisSharedState;
  let store: OAuth2StateRepository;

  beforeAll(() => {
    shared = new RedisSharedState(
      process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379',
      `spec-${randomBytes(4).toString('hex')}:`,
    );
    store = new OAuth2StateRepository(shared);
  });
  afterAll(() => shared.onModuleDestroy());

  it('hands an authorization state out once, even to concurrent callers', async () => {
    const s = randomState();
    await store.saveAuthorization(s, {
      registrationId: 'a',
      kind: 'standard',
      callbackUrl: 'http://x/cb',
      frontendUrl: 'https://f/',
    });
    const results = await Promise.all([
      store.takeAuthorization(s),
      store.takeAuthorization(s),
      store.takeAuthorization(s),
    ]);
    expect(results.filter(Boolean)).toHaveLength(1);
    expect(await store.takeAuthorization(s)).toBeNull();
  });

  it('refuses to overwrite a live state and ignores junk keys', async () => {
    const s = randomState();
    const value = { registrationId: 'a', kind: 'standard' as const, callbackUrl: 'c', frontendUrl: 'f' };
    await store.saveAuthorization(s, value);
    await expect(store.saveAuthorization(s, value)).rejects.toThrow(/collision/);
    for (const junk of ['', 'short', '../../etc', 'x'.repeat(65), 'a b c d e f g h i j']) {
      expect(await store.takeAuthorization(junk)).toBeNull();
      expect(await store.getQrcode(junk)).toBeNull();
    }
  });

  it('reports EXPIRED after the QR lifetime unless the login was already authorized', async () => {
    const waiting = randomState();
    const done = randomState();
    await store.createQrcode(waiting, { registrationId: 'w', kind: 'wechat-mp-scan', expiresAt: Date.now() + 150 });
    await store.createQrcode(done, { registrationId: 'w', kind: 'wechat-mp-scan', expiresAt: Date.now() + 150 });
    expect((await store.getQrcode(waiting))?.status).toBe(QrcodeState.WAITED);
    await store.setQrcodeStatus(done, QrcodeState.AUTHORIZED);
    await new Promise((r) => setTimeout(r, 200));
    expect((await store.getQrcode(waiting))?.status).toBe(QrcodeState.EXPIRED);
    expect((await store.getQrcode(done))?.status).toBe(QrcodeState.AUTHORIZED);
  });

  it('exchanges a pending login once and lets only the first claimant through', async () => {
    const s = randomState();
    await store.savePendingLogin(s, {
      memberId: '1',
      registrationId: 'r',
      provider: 'github',
      loginType: 'github',
      openId: 'o',
      unionId: null,
      nickname: null,
      avatarUrl: null,
      isNewUser: true,
      isBound: false,
    });
    expect((await store.takePendingLogin(s))?.memberId).toBe('1');
    expect(await store.takePendingLogin(s)).toBeNull();
    const claims = await Promise.all([store.claim(`k:${s}`, 1000), store.claim(`k:${s}`, 1000)]);
    expect(claims.sort()).toEqual([false, true]);
  });
});
