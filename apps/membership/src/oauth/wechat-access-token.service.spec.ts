import { randomBytes } from 'node:crypto';
import { RedisSharedState } from '@app/platform';
import { WechatApiClient, WechatApiError } from '@app/wechat';
import { WechatTestServer, startWechatServer } from '../../../../test/support/wechat-server';
import { OAuth2ClientRegistration } from './clients/oauth2-client-registration';
import { WechatAccessTokenService } from './wechat-access-token.service';

// Real Redis (127.0.0.1:6379) as the shared cache, real HTTP to the local WeChat protocol server.
describe('WechatAccessTokenService', () => {
  let wx: WechatTestServer;
  let shared: RedisSharedState;
  let reg: OAuth2ClientRegistration;

  beforeAll(async () => {
    wx = await startWechatServer([{ appId: 'wxmp', secret: 'mp-secret', kind: 'mp', token: 't' }]);
    shared = new RedisSharedState(
      process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379',
      `spec-${randomBytes(4).toString('hex')}:`,
    );
    reg = {
      registrationId: 'wechat-mp',
      provider: 'wechat-mp',
      clientId: 'wxmp',
      clientSecret: 'mp-secret',
    } as OAuth2ClientRegistration;
  });
  afterAll(async () => {
    await shared.onModuleDestroy();
    await wx.close();
  });

  const service = () => new WechatAccessTokenService(new WechatApiClient({ apiBase: wx.url }), shared);

  it('fetches once for concurrent callers on several "replicas" and caches below WeChat\'s 7200 s', async () => {
    const before = wx.calls.get('cgi-bin/token') ?? 0;
    const tokens = await Promise.all([service().get(reg), service().get(reg), service().get(reg), service().get(reg)]);
    expect(new Set(tokens).size).toBe(1);
    expect(wx.calls.get('cgi-bin/token')).toBe(before + 1);
    const ttl = await shared.ttl('wechat:access-token:wxmp');
    expect(ttl).toBeGreaterThan(6_000_000);
    expect(ttl).toBeLessThanOrEqual(6_900_000);
  });

  it('refreshes once when WeChat reports the token invalid, then retries the call', async () => {
    const svc = service();
    const first = await svc.get(reg);
    wx.revokeAppTokens();
    const qr = await svc.withToken(reg, (token) =>
      new WechatApiClient({ apiBase: wx.url }).createTemporaryQrcode(token, 'scene', 60),
    );
    expect(qr.ticket).toBeTruthy();
    expect(await svc.get(reg)).not.toBe(first);
  });

  it('does not retry errors unrelated to the token', async () => {
    const svc = service();
    let calls = 0;
    wx.failNext.set('cgi-bin/qrcode/create', { errcode: 45009, errmsg: 'quota' });
    await expect(
      svc.withToken(reg, (token) => {
        calls++;
        return new WechatApiClient({ apiBase: wx.url }).createTemporaryQrcode(token, 'scene', 60);
      }),
    ).rejects.toMatchObject({ errcode: 45009 });
    expect(calls).toBe(1);
  });
  it('while WeChat refuses the token call: one call for concurrent callers, none for FAILURE_MEMORY_MS after, on every replica', async () => {
    const failing = { ...reg, clientId: 'wxmp-refused' };
    const accessToken = jest.fn(() =>
      Promise.reject(new WechatApiError(40164, 'invalid ip, not in whitelist', 'cgi-bin/token')),
    );
    const replica = () => new WechatAccessTokenService({ accessToken } as unknown as WechatApiClient, shared);
    const one = replica();
    const reads = jest.spyOn(shared, 'get');
    try {
      const first = await Promise.allSettled(Array.from({ length: 10 }, () => one.get(failing)));
      expect(first.map((r) => r.status)).toEqual(Array(10).fill('rejected'));
      expect(accessToken).toHaveBeenCalledTimes(1);
      // One polling loop for the ten callers of this replica (each caller reads the cache once, the loop a few times).
      expect(reads.mock.calls.length).toBeLessThanOrEqual(10 + 3);
      // Another replica, a moment later: the refusal is answered from shared state, WeChat is not asked.
      await expect(replica().get(failing)).rejects.toMatchObject({ errcode: 40164 });
      expect(accessToken).toHaveBeenCalledTimes(1);
    } finally {
      reads.mockRestore();
      await shared.del('wechat:access-token:wxmp-refused:failed');
    }
  });
});
