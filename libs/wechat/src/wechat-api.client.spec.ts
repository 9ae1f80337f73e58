import { WechatTestServer, startWechatServer } from '../../../test/support/wechat-server';
import { WechatApiClient, WechatApiError } from './wechat-api.client';

describe('WechatApiClient against the local WeChat protocol server', () => {
  let wx: WechatTestServer;
  let client: WechatApiClient;

  beforeAll(async () => {
    wx = await startWechatServer([
      { appId: 'wxopen', secret: 'open-secret', kind: 'open' },
      { appId: 'wxmp', secret: 'mp-secret', kind: 'mp', token: 't' },
    ]);
    client = new WechatApiClient({ openBase: wx.url, apiBase: wx.url + '/', mpBase: wx.url });
  });
  afterAll(() => wx.close());

  it('builds documented authorization URLs with #wechat_redirect', () => {
    const url = client.authorizeUrl({
      appId: 'wxopen',
      redirectUri: 'https://a.example/cb?x=1',
      scope: 'snsapi_login',
      state: 's1',
    });
    expect(url).toBe(
      `${wx.url}/connect/qrconnect?appid=wxopen&redirect_uri=https%3A%2F%2Fa.example%2Fcb%3Fx%3D1&response_type=code&scope=snsapi_login&state=s1#wechat_redirect`,
    );
    expect(
      client.authorizeUrl({ appId: 'wxmp', redirectUri: 'https://a', scope: 'snsapi_base', state: 's' }),
    ).toContain('/connect/oauth2/authorize?');
    expect(
      new WechatApiClient().authorizeUrl({ appId: 'a', redirectUri: 'b', scope: 'snsapi_userinfo', state: 'c' }),
    ).toMatch(/^https:\/\/open\.weixin\.qq\.com\/connect\/oauth2\/authorize\?/);
  });

  it('exchanges a code once and reads the user, surfacing errcode answers as WechatApiError', async () => {
    const authorize = await fetch(
      client.authorizeUrl({ appId: 'wxopen', redirectUri: 'https://a.example/cb', scope: 'snsapi_login', state: 's1' }),
      {
        redirect: 'manual',
      },
    );
    const code = new URL(authorize.headers.get('location')!).searchParams.get('code')!;
    await expect(client.exchangeCode('wxopen', 'wrong', code)).rejects.toMatchObject({ errcode: 40125 });
    const token = await client.exchangeCode('wxopen', 'open-secret', code);
    expect(token.openid).toBe(wx.openidOf('wxopen', wx.user));
    expect(token.unionid).toBe('union-alice');
    await expect(client.exchangeCode('wxopen', 'open-secret', code)).rejects.toMatchObject({ errcode: 40163 });
    const info = await client.snsUserInfo(token.access_token, token.openid);
    expect(info.nickname).toBe('Alice');
    await expect(client.snsUserInfo('nope', token.openid)).rejects.toBeInstanceOf(WechatApiError);
  });

  it('creates temporary QR codes with an official-account token and flags invalid tokens', async () => {
    const { access_token } = await client.accessToken('wxmp', 'mp-secret');
    const qr = await client.createTemporaryQrcode(access_token, 'scene-1', 120);
    expect(qr.expire_seconds).toBe(120);
    expect(wx.tickets.get(qr.ticket)?.sceneStr).toBe('scene-1');
    expect(client.showQrcodeUrl(qr.ticket)).toBe(
      `${wx.url}/cgi-bin/showqrcode?ticket=${encodeURIComponent(qr.ticket)}`,
    );
    wx.revokeAppTokens();
    const err = await client.createTemporaryQrcode(access_token, 'scene-2', 60).catch((e) => e);
    expect(err).toBeInstanceOf(WechatApiError);
    expect(err.isAccessTokenInvalid).toBe(true);
  });

  it('reports transport failures as errcode -2', async () => {
    const dead = new WechatApiClient({ apiBase: 'http://127.0.0.1:1' }, 2000);
    await expect(dead.accessToken('a', 'b')).rejects.toMatchObject({ errcode: -2 });
  });
});
