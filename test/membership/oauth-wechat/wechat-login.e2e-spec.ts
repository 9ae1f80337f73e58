/**
 * WeChat login end to end against a local server speaking WeChat's documented protocols: website QR
 * (open platform), official-account scan (parametric QR + signed / AES event pushes), in-app and silent
 * authorization, errcode answers, expired scenes, and the desktop polling journey.
 */
import { randomInt } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { RunningApp, startMembership } from '../../support/apps';
import { WechatMessageCrypto, buildWechatXml, wechatSignature } from '@app/wechat';
import { Browser } from '../../support/browser';
import { WechatTestServer, WechatTestUser, startWechatServer } from '../../support/wechat-server';

const FRONTEND = 'https://www.example.com/oauth/callback';
const OPEN = 'wxopen00000000001';
const MP = 'wxmp000000000001';
/** A second official account in plaintext mode (no EncodingAESKey). */
const MP_PLAIN = 'wxmpplain0000001';
const AES_KEY = 'kWxPEV2UEDyxWpmPdKC3F4dgPDmOvfKX1HGnEUDS1aR';
const BOB: WechatTestUser = { key: 'bob', nickname: 'Bob', unionid: 'union-bob' };

describe('WeChat login against a local WeChat protocol server', () => {
  let wx: WechatTestServer;
  let app: RunningApp;
  let aliceMemberId: string;
  let clientsFile: string;

  /** The desktop / in-WeChat browser: QR pages call the API same-origin (or with credentials), so cookies travel. */
  let browser: Browser;
  beforeEach(() => {
    browser = new Browser();
  });
  /**
   * Each browser calls from its own address (the app trusts X-Forwarded-For from loopback): POST mp/qrcode
   * allows 10 a minute per address, and this suite asks for more codes than that within a minute.
   */
  const addresses = new WeakMap<Browser, string>();
  const addressOf = (b: Browser) => {
    if (!addresses.has(b)) addresses.set(b, `10.${randomInt(256)}.${randomInt(256)}.${randomInt(1, 255)}`);
    return addresses.get(b)!;
  };
  const api = async (path: string, init: RequestInit = {}, b: Browser = browser) => {
    const res = await fetch(app.url + path, {
      ...init,
      headers: b.headers({ ...(init.headers as Record<string, string>), 'x-forwarded-for': addressOf(b) }),
      redirect: 'manual',
    });
    b.store(res);
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null };
  };
  const poll = async (state: string) => (await api(`/api/v1/app/oauth2/qrcode/state/${state}`)).body;
  const exchange = (state: string) => api(`/api/v1/app/oauth2/callback?state=${encodeURIComponent(state)}`);
  /** A browser hop: GET without following, returns the Location. */
  const hop = async (url: string, b: Browser = browser) => {
    const res = await b.navigate(url);
    await res.text();
    expect(res.status).toBe(302);
    return new URL(res.headers.get('location')!);
  };
  /** Moves a scene's expiry (and, given, its creation time) in the shared-state table. */
  const shiftSceneExpiry = async (state: string, expiresAt: number, createdAt?: number) => {
    const db = new Client({ connectionString: app.dbUrl });
    await db.connect();
    try {
      const { rowCount } = await db.query(
        `UPDATE shared_state SET value = jsonb_set(
           CASE WHEN $3::bigint IS NULL THEN value::jsonb ELSE jsonb_set(value::jsonb, '{createdAt}', to_jsonb($3::bigint)) END,
           '{expiresAt}', to_jsonb($2::bigint))::text WHERE key = $1`,
        [`oauth2:qr:${state}`, expiresAt, createdAt ?? null],
      );
      expect(rowCount).toBe(1);
    } finally {
      await db.end();
    }
  };

  beforeAll(async () => {
    wx = await startWechatServer([
      { appId: OPEN, secret: 'open-secret-1', kind: 'open' },
      {
        appId: MP,
        secret: 'mp-secret-1',
        kind: 'mp',
        token: 'portalToken1',
        encodingAesKey: AES_KEY,
        originalId: 'gh_0123456789ab',
      },
      { appId: MP_PLAIN, secret: 'mp-secret-2', kind: 'mp', token: 'portalToken2', originalId: 'gh_plain000000' },
    ]);
    wx.knownUsers.push(BOB);
    const dir = mkdtempSync(join(tmpdir(), 'wechat-clients-'));
    const file = (clientsFile = join(dir, 'clients.json'));
    writeFileSync(
      file,
      JSON.stringify({
        clients: [
          {
            registrationId: 'wechat-app',
            provider: 'wechat-open',
            clientId: OPEN,
            clientSecret: 'open-secret-1',
            redirectUri: FRONTEND,
          },
          {
            registrationId: 'wechat-mp',
            provider: 'wechat-mp',
            clientId: MP,
            clientSecret: 'mp-secret-1',
            token: 'portalToken1',
            encodingAesKey: AES_KEY,
            redirectUri: FRONTEND,
          },
          {
            registrationId: 'wechat-mp-plain',
            provider: 'wechat-mp',
            clientId: MP_PLAIN,
            clientSecret: 'mp-secret-2',
            token: 'portalToken2',
            redirectUri: FRONTEND,
          },
        ],
      }),
    );
    app = await startMembership({
      OAUTH2_CLIENTS_FILE: file,
      WECHAT_OPEN_BASE: wx.url,
      WECHAT_API_BASE: wx.url,
      WECHAT_MP_BASE: wx.url,
    });
    wx.setPortal(MP, `${app.url}/api/v1/wechat/portal/${MP}`);
    wx.setPortal(MP_PLAIN, `${app.url}/api/v1/wechat/portal/${MP_PLAIN}`);
  });

  afterAll(async () => {
    await app?.close();
    await wx?.close();
  });

  describe('website QR (open platform)', () => {
    it('desktop journey: create, poll WAITED, scan and confirm, poll AUTHORIZED, exchange once', async () => {
      const created = await api('/api/v1/app/oauth2/wechat/qrcode');
      expect(created.status).toBe(200);
      const qr = created.body.data;
      expect(qr).toMatchObject({
        appId: OPEN,
        scope: 'snsapi_login',
        redirectUri: `${app.url}/login/oauth2/code/wechat-app`,
      });
      expect(qr.authorizationUri).toMatch(
        new RegExp(
          `^${wx.url}/connect/qrconnect\\?appid=${OPEN}&redirect_uri=.+&response_type=code&scope=snsapi_login&state=${qr.state}#wechat_redirect$`,
        ),
      );
      expect(await poll(qr.state)).toEqual({
        code: 200,
        message: 'success',
        data: { state: qr.state, qrcodeState: 0 },
      });

      // The user scans and confirms on the phone: WeChat sends the page to the server callback.
      const callback = await hop(qr.authorizationUri);
      expect(callback.toString().startsWith(`${app.url}/login/oauth2/code/wechat-app?code=`)).toBe(true);
      const frontend = await hop(callback.toString());
      expect(frontend.origin + frontend.pathname).toBe(FRONTEND);
      expect(frontend.searchParams.get('state')).toBe(qr.state);
      expect((await poll(qr.state)).data.qrcodeState).toBe(2);

      const login = await exchange(qr.state);
      expect(login.status).toBe(200);
      expect(login.body.data).toMatchObject({
        openId: wx.openidOf(OPEN, wx.user),
        unionId: 'union-alice',
        thirdPartyNickname: 'Alice',
        thirdPartyAvatarUrl: 'https://wx.qlogo.cn/alice.png',
        isNewUser: true,
        tokenType: 'Bearer',
      });
      aliceMemberId = login.body.data.memberId;
      const again = await exchange(qr.state);
      expect(again.status).toBe(400);
      expect(again.body.code).toBe(10003);
    });

    it('the user refusing on the phone cancels the state (3) and reports access_denied', async () => {
      const qr = (await api('/api/v1/app/oauth2/wechat/qrcode')).body.data;
      wx.denyNext = true;
      const callback = await hop(qr.authorizationUri);
      expect(callback.searchParams.get('code')).toBeNull();
      const frontend = await hop(callback.toString());
      expect(frontend.searchParams.get('error')).toBe('access_denied');
      expect((await poll(qr.state)).data.qrcodeState).toBe(3);
      expect((await exchange(qr.state)).status).toBe(400);
    });

    it.each([
      ['sns/oauth2/access_token', 40029, 'invalid_grant'],
      ['sns/userinfo', 40001, 'server_error'],
    ])('an errcode from %s (%i) ends the login with %s', async (apiPath, errcode, error) => {
      const qr = (await api('/api/v1/app/oauth2/wechat/qrcode')).body.data;
      wx.failNext.set(apiPath, { errcode, errmsg: 'test' });
      const frontend = await hop((await hop(qr.authorizationUri)).toString());
      expect(frontend.searchParams.get('error')).toBe(error);
      expect(frontend.searchParams.get('state')).toBeNull();
      expect((await poll(qr.state)).data.qrcodeState).toBe(3);
    });

    it('an unknown state is a 404 envelope, an old one is EXPIRED (4)', async () => {
      const unknown = await api(`/api/v1/app/oauth2/qrcode/state/${'x'.repeat(32)}`);
      expect(unknown.status).toBe(404);
      expect(unknown.body.code).toBe(404);
      expect((await api('/api/v1/app/oauth2/qrcode/state/..%2F..')).status).toBe(404);
      const qr = (await api('/api/v1/app/oauth2/wechat/qrcode')).body.data;
      await shiftSceneExpiry(qr.state, Date.now() - 1000);
      expect((await poll(qr.state)).data.qrcodeState).toBe(4);
    });
  });

  describe('official-account scan', () => {
    it('desktop journey with a SCAN event: WAITED -> AUTHORIZED, unionid joins the website member, exchange once, repeated push processed once', async () => {
      const created = await api('/api/v1/app/oauth2/mp/qrcode?expireSeconds=120', { method: 'POST' });
      expect(created.status).toBe(200);
      const qr = created.body.data;
      expect(qr).toMatchObject({
        expireSeconds: 120,
        qrCodeUrl: expect.stringMatching(/^http:\/\/weixin\.qq\.com\/q\//),
      });
      expect(qr.showQrCodeUrl).toBe(`${wx.url}/cgi-bin/showqrcode?ticket=${encodeURIComponent(qr.ticket)}`);
      expect((await fetch(qr.showQrCodeUrl)).status).toBe(200);
      expect(wx.tickets.get(qr.ticket)?.sceneStr).toBe(qr.sceneStr);
      expect((await poll(qr.sceneStr)).data.qrcodeState).toBe(0);

      const createTime = Math.floor(Date.now() / 1000);
      // While the server reads the follower's profile (held here) the scene shows SCANNED.
      const profileRead = wx.hold('cgi-bin/user/info');
      const pushing = wx.scan(qr.ticket, { event: 'SCAN', createTime });
      await profileRead.reached;
      expect((await poll(qr.sceneStr)).data.qrcodeState).toBe(1);
      profileRead.release();
      const pushed = await pushing;
      expect(pushed.status).toBe(200);
      expect(pushed.reply).toMatchObject({
        MsgType: 'text',
        ToUserName: wx.openidOf(MP, wx.user),
        Content: expect.stringContaining('Login confirmed'),
      });
      expect([1, 2]).toContain((await poll(qr.sceneStr)).data.qrcodeState);
      expect((await poll(qr.sceneStr)).data.qrcodeState).toBe(2);

      // WeChat retries a push it thinks was lost: processed once, answered with plain success.
      const retry = await wx.scan(qr.ticket, { event: 'SCAN', createTime });
      expect(retry).toMatchObject({ status: 200, body: 'success' });

      const login = await exchange(qr.sceneStr);
      expect(login.status).toBe(200);
      expect(login.body.data).toMatchObject({
        memberId: aliceMemberId,
        openId: wx.openidOf(MP, wx.user),
        unionId: 'union-alice',
        isNewUser: false,
      });
      expect((await exchange(qr.sceneStr)).body.code).toBe(10003);

      // A second scan (another user, later) does not take over a used scene.
      const late = await wx.scan(qr.ticket, { event: 'SCAN', user: BOB });
      expect(late.reply?.Content).toMatch(/already been used/);
    });

    it('subscribe event with qrscene_ in AES safe mode logs in a new follower; the reply is encrypted', async () => {
      const qr = (await api('/api/v1/app/oauth2/mp/qrcode', { method: 'POST' })).body.data;
      expect(qr.expireSeconds).toBe(300);
      const pushed = await wx.scan(qr.ticket, { event: 'subscribe', encrypted: true, user: BOB });
      expect(pushed.status).toBe(200);
      expect(pushed.body).toContain('<Encrypt>');
      expect(pushed.body).not.toContain('Login confirmed');
      expect(pushed.reply?.Content).toContain('Login confirmed');
      expect((await poll(qr.sceneStr)).data.qrcodeState).toBe(2);
      const login = await exchange(qr.sceneStr);
      expect(login.body.data).toMatchObject({
        openId: wx.openidOf(MP, BOB),
        unionId: 'union-bob',
        thirdPartyNickname: 'Bob',
        isNewUser: true,
      });
      expect(login.body.data.memberId).not.toBe(aliceMemberId);
    });

    it('an expired scene answers 4 and a late scan does not log in', async () => {
      const qr = (await api('/api/v1/app/oauth2/mp/qrcode?expireSeconds=60', { method: 'POST' })).body.data;
      await shiftSceneExpiry(qr.sceneStr, Date.now() - 1000);
      expect((await poll(qr.sceneStr)).data.qrcodeState).toBe(4);
      const late = await wx.scan(qr.ticket, { event: 'SCAN' });
      expect(late.reply?.Content).toMatch(/expired/);
      expect((await poll(qr.sceneStr)).data.qrcodeState).toBe(4);
      expect((await exchange(qr.sceneStr)).status).toBe(400);
    });

    it('shares one cached access token and refreshes it once WeChat invalidates it', async () => {
      const before = wx.calls.get('cgi-bin/token') ?? 0;
      // Three browsers: each needs a code of its own (one browser asking again gets its code back).
      for (let i = 0; i < 3; i++)
        expect((await api('/api/v1/app/oauth2/mp/qrcode', { method: 'POST' }, new Browser())).status).toBe(200);
      expect(wx.calls.get('cgi-bin/token') ?? 0).toBe(before);
      wx.revokeAppTokens();
      expect((await api('/api/v1/app/oauth2/mp/qrcode', { method: 'POST' }, new Browser())).status).toBe(200);
      expect(wx.calls.get('cgi-bin/token')).toBe(before + 1);
      expect(before).toBeLessThanOrEqual(1);
    });

    it('the same browser asking again gets the same code back: one qrcode/create call, until it is scanned or half its life is gone', async () => {
      const creates = () => wx.calls.get('cgi-bin/qrcode/create') ?? 0;
      const before = creates();
      const first = (await api('/api/v1/app/oauth2/mp/qrcode?expireSeconds=120', { method: 'POST' })).body.data;
      // Reloads and retries of one page (the binding cookie travels): no new code at WeChat.
      for (const path of ['/api/v1/app/oauth2/mp/qrcode', '/api/v1/app/oauth2/mp/qrcode?expireSeconds=300']) {
        const again = await api(path, { method: 'POST' });
        expect(again.status).toBe(200);
        expect(again.body.data).toMatchObject({
          sceneStr: first.sceneStr,
          ticket: first.ticket,
          qrCodeUrl: first.qrCodeUrl,
          showQrCodeUrl: first.showQrCodeUrl,
        });
        expect(again.body.data.expireSeconds).toBeGreaterThan(60);
        expect(again.body.data.expireSeconds).toBeLessThanOrEqual(120);
      }
      expect(creates() - before).toBe(1);

      // Another browser, and one whose cookie is made from the scene id a stranger can see, get codes of their own.
      const other = (await api('/api/v1/app/oauth2/mp/qrcode', { method: 'POST' }, new Browser())).body.data;
      expect(other.sceneStr).not.toBe(first.sceneStr);
      const guesser = new Browser();
      guesser.set('oauth2_binding', first.sceneStr.slice(0, 32).padEnd(43, 'A'));
      expect((await api('/api/v1/app/oauth2/mp/qrcode', { method: 'POST' }, guesser)).body.data.sceneStr).not.toBe(
        first.sceneStr,
      );
      expect(creates() - before).toBe(3);

      // Less than half of its lifetime left: a fresh code (a page refreshing near the end is not shown a dying one).
      await shiftSceneExpiry(first.sceneStr, Date.now() + 40_000, Date.now() - 80_000);
      const fresh = (await api('/api/v1/app/oauth2/mp/qrcode', { method: 'POST' })).body.data;
      expect(fresh.sceneStr).not.toBe(first.sceneStr);
      expect(creates() - before).toBe(4);
      expect((await api('/api/v1/app/oauth2/mp/qrcode', { method: 'POST' })).body.data.sceneStr).toBe(fresh.sceneStr);

      // Once scanned, the next ask is a new login attempt with a new code; the scanned one is still exchanged.
      expect((await wx.scan(fresh.ticket, { event: 'SCAN' })).reply?.Content).toContain('Login confirmed');
      const next = (await api('/api/v1/app/oauth2/mp/qrcode', { method: 'POST' })).body.data;
      expect(next.sceneStr).not.toBe(fresh.sceneStr);
      expect(creates() - before).toBe(5);
      expect((await exchange(fresh.sceneStr)).status).toBe(200);
    });

    it('an errcode from qrcode/create is a 503 envelope; out-of-range expireSeconds a 400', async () => {
      wx.failNext.set('cgi-bin/qrcode/create', { errcode: 45009, errmsg: 'reach max api daily quota limit' });
      const failed = await api('/api/v1/app/oauth2/mp/qrcode', { method: 'POST' });
      expect(failed.status).toBe(503);
      expect(failed.body.message).toContain('45009');
      for (const bad of ['30', '301', 'abc']) {
        const res = await api(`/api/v1/app/oauth2/mp/qrcode?expireSeconds=${bad}`, { method: 'POST' });
        expect(res.status).toBe(400);
        expect(res.body.code).toBe(10000);
      }
      expect((await api('/api/v1/app/oauth2/mp/qrcode?appId=wxunknown', { method: 'POST' })).status).toBe(404);
    });

    it('portal: handshake with a valid signature, refusals for bad signature, stale timestamp, bad AES signature, unknown appid, junk', async () => {
      const ok = await wx.handshake(MP);
      expect(ok.status).toBe(200);
      expect(ok.body).toBe(ok.echostr);
      expect((await wx.handshake(MP, { badSignature: true })).status).toBe(403);
      expect((await wx.handshake(MP, { timestamp: Math.floor(Date.now() / 1000) - 3600 })).status).toBe(403);

      const qr = (await api('/api/v1/app/oauth2/mp/qrcode', { method: 'POST' })).body.data;
      expect((await wx.scan(qr.ticket, { badSignature: true })).status).toBe(403);
      expect((await wx.scan(qr.ticket, { msgTimestamp: Math.floor(Date.now() / 1000) - 3600 })).status).toBe(403);
      expect((await poll(qr.sceneStr)).data.qrcodeState).toBe(0);

      // AES body whose msg_signature does not match.
      const ts = String(Math.floor(Date.now() / 1000));
      const sig = wechatSignature('portalToken1', ts, 'n1');
      const tampered = await fetch(
        `${app.url}/api/v1/wechat/portal/${MP}?signature=${sig}&timestamp=${ts}&nonce=n1&encrypt_type=aes&msg_signature=${'0'.repeat(40)}`,
        {
          method: 'POST',
          headers: { 'content-type': 'text/xml' },
          body: '<xml><ToUserName><![CDATA[gh_0123456789ab]]></ToUserName><Encrypt><![CDATA[AAAA]]></Encrypt></xml>',
        },
      );
      expect(tampered.status).toBe(403);
      const junk = await fetch(
        `${app.url}/api/v1/wechat/portal/${MP}?signature=${sig}&timestamp=${ts}&nonce=n1&encrypt_type=aes&msg_signature=${'0'.repeat(40)}`,
        {
          method: 'POST',
          headers: { 'content-type': 'text/xml' },
          body: 'not xml',
        },
      );
      expect(junk.status).toBe(400);
      expect(
        (await fetch(`${app.url}/api/v1/wechat/portal/wxunknown?signature=${sig}&timestamp=${ts}&nonce=n1&echostr=1`))
          .status,
      ).toBe(404);
      expect((await poll(qr.sceneStr)).data.qrcodeState).toBe(0);
    });
  });

  describe('portal forgery, replay and parser abuse (audit M1, M2)', () => {
    const signedUrl = (appId: string, token: string, extra: Record<string, string> = {}) => {
      const timestamp = String(Math.floor(Date.now() / 1000));
      const nonce = Math.random().toString(36).slice(2, 12);
      return `${app.url}/api/v1/wechat/portal/${appId}?${new URLSearchParams({ signature: wechatSignature(token, timestamp, nonce), timestamp, nonce, ...extra }).toString()}`;
    };

    it('safe mode: a validly signed plaintext SCAN push is refused and logs nobody in', async () => {
      const qr = (await api('/api/v1/app/oauth2/mp/qrcode', { method: 'POST' })).body.data;
      const forged = await wx.scan(qr.ticket, { event: 'SCAN', encrypted: false, user: BOB });
      expect(forged.status).toBe(403);
      expect((await poll(qr.sceneStr)).data.qrcodeState).toBe(0);
      expect((await exchange(qr.sceneStr)).status).toBe(400);
    });

    it('safe mode: a captured push replayed as is is refused (the (timestamp, nonce) pair is used up)', async () => {
      const qr = (await api('/api/v1/app/oauth2/mp/qrcode', { method: 'POST' })).body.data;
      const text = buildWechatXml({
        ToUserName: 'gh_0123456789ab',
        FromUserName: wx.openidOf(MP, BOB),
        CreateTime: Math.floor(Date.now() / 1000),
        MsgType: 'text',
        Content: 'hi',
        MsgId: 1234567,
      });
      const first = await wx.push(MP, text, wx.openidOf(MP, BOB));
      expect(first).toMatchObject({ status: 200, body: 'success' });
      const replay = await wx.send(first.request.url, first.request.body);
      expect(replay.status).toBe(403);
      expect(JSON.parse(replay.body)).toMatchObject({ code: 403, message: expect.stringMatching(/replay/) });
      expect((await poll(qr.sceneStr)).data.qrcodeState).toBe(0);
    });

    it('compatible mode (plaintext + Encrypt): only the encrypted copy counts', async () => {
      const qr = (await api('/api/v1/app/oauth2/mp/qrcode', { method: 'POST' })).body.data;
      const genuine = buildWechatXml({
        ToUserName: 'gh_0123456789ab',
        FromUserName: wx.openidOf(MP, BOB),
        CreateTime: Math.floor(Date.now() / 1000),
        MsgType: 'text',
        Content: 'hello',
      });
      const crypto = new WechatMessageCrypto('portalToken1', AES_KEY, MP);
      const encrypted = crypto.encrypt(genuine);
      // Plaintext fields claim a SCAN of the scene; the signed, encrypted copy is an ordinary text message.
      const body = buildWechatXml({
        ToUserName: 'gh_0123456789ab',
        FromUserName: wx.openidOf(MP, BOB),
        CreateTime: 1,
        MsgType: 'event',
        Event: 'SCAN',
        EventKey: qr.sceneStr,
        Encrypt: encrypted,
      });
      const url = signedUrl(MP, 'portalToken1');
      const q = new URL(url).searchParams;
      const res = await wx.send(
        `${url}&encrypt_type=aes&msg_signature=${crypto.messageSignature(q.get('timestamp')!, q.get('nonce')!, encrypted)}`,
        body,
      );
      expect(res).toMatchObject({ status: 200, body: 'success' });
      expect((await poll(qr.sceneStr)).data.qrcodeState).toBe(0);
    });

    it('plaintext mode: one captured push URL cannot carry a forged SCAN body', async () => {
      const qr = (await api(`/api/v1/app/oauth2/mp/qrcode?appId=${MP_PLAIN}`, { method: 'POST' })).body.data;
      const text = buildWechatXml({
        ToUserName: 'gh_plain000000',
        FromUserName: wx.openidOf(MP_PLAIN, BOB),
        CreateTime: Math.floor(Date.now() / 1000),
        MsgType: 'text',
        Content: 'hi',
      });
      const captured = await wx.push(MP_PLAIN, text, wx.openidOf(MP_PLAIN, BOB));
      expect(captured).toMatchObject({ status: 200, body: 'success' });
      const forgedScan = buildWechatXml({
        ToUserName: 'gh_plain000000',
        FromUserName: 'oATTACKER',
        CreateTime: Math.floor(Date.now() / 1000),
        MsgType: 'event',
        Event: 'SCAN',
        EventKey: qr.sceneStr,
      });
      const forged = await wx.send(captured.request.url, forgedScan);
      expect(forged.status).toBe(403);
      expect((await poll(qr.sceneStr)).data.qrcodeState).toBe(0);
      // The genuine scan (a new signed request) still works.
      expect((await wx.scan(qr.ticket, { event: 'SCAN' })).reply?.Content).toContain('Login confirmed');
      expect((await poll(qr.sceneStr)).data.qrcodeState).toBe(2);
    });

    it('a 365-byte backtracking-shaped push is a 400 and liveness answers meanwhile; a 9 KB body is a 413', async () => {
      const hostile = `<xml><a>${'<![CDATA[]]>'.repeat(29)}</xml>`;
      expect(hostile.length).toBeLessThanOrEqual(365);
      const pushes = [1, 2, 3].map(() =>
        wx.send(signedUrl(MP, 'portalToken1', { encrypt_type: 'aes', msg_signature: '0'.repeat(40) }), hostile),
      );
      const live = await fetch(`${app.url}/actuator/health/liveness`);
      expect(live.status).toBe(200);
      for (const res of await Promise.all(pushes)) {
        expect(res.status).toBe(400);
        expect(JSON.parse(res.body)).toMatchObject({ code: 400, data: null });
      }
      const plainHostile = await wx.send(
        signedUrl(MP_PLAIN, 'portalToken2'),
        `<xml>${'<a>'.repeat(120)}${'<'.repeat(200)}`,
      );
      expect(plainHostile.status).toBe(400);
      const big = await wx.send(
        signedUrl(MP, 'portalToken1', { encrypt_type: 'aes' }),
        `<xml><Encrypt><![CDATA[${'A'.repeat(9 * 1024)}]]></Encrypt></xml>`,
      );
      expect(big.status).toBe(413);
      expect(JSON.parse(big.body).code).toBe(413);
    });
  });

  describe('QR states belong to the browser that created them (audit M3 class)', () => {
    it('official-account scan: a stranger who knows the sceneStr cannot exchange it; the creating page still can', async () => {
      const qr = (await api('/api/v1/app/oauth2/mp/qrcode', { method: 'POST' })).body.data;
      expect((await wx.scan(qr.ticket, { event: 'SCAN' })).reply?.Content).toContain('Login confirmed');
      const stranger = await api(`/api/v1/app/oauth2/callback?state=${qr.sceneStr}`, {}, new Browser());
      expect(stranger.status).toBe(403);
      const mine = await exchange(qr.sceneStr);
      expect(mine.status).toBe(200);
      expect(typeof mine.body.data.memberId).toBe('string');
    });

    it('website QR: the callback URL carried to another browser is refused (403) and the state cannot be exchanged there', async () => {
      const qr = (await api('/api/v1/app/oauth2/wechat/qrcode')).body.data;
      const callback = await hop(qr.authorizationUri);
      const victim = new Browser();
      const res = await victim.navigate(callback.toString());
      expect(res.status).toBe(403);
      expect((await api(`/api/v1/app/oauth2/callback?state=${qr.state}`, {}, victim)).status).toBe(400);
    });
  });

  describe('two replicas on one database', () => {
    it('a scene created on one replica is polled, scanned and exchanged on the other', async () => {
      const replica = await startMembership(
        { OAUTH2_CLIENTS_FILE: clientsFile, WECHAT_OPEN_BASE: wx.url, WECHAT_API_BASE: wx.url, WECHAT_MP_BASE: wx.url },
        { dbUrl: app.dbUrl, keepDatabase: true },
      );
      try {
        const qr = (await api('/api/v1/app/oauth2/mp/qrcode', { method: 'POST' })).body.data;
        const onReplica = async (path: string) =>
          await (await fetch(replica.url + path, { headers: browser.headers() })).json();
        expect((await onReplica(`/api/v1/app/oauth2/qrcode/state/${qr.sceneStr}`)).data.qrcodeState).toBe(0);
        wx.setPortal(MP, `${replica.url}/api/v1/wechat/portal/${MP}`);
        expect((await wx.scan(qr.ticket, { event: 'SCAN' })).reply?.Content).toContain('Login confirmed');
        expect((await poll(qr.sceneStr)).data.qrcodeState).toBe(2);
        const login = await onReplica(`/api/v1/app/oauth2/callback?state=${qr.sceneStr}`);
        expect(login.data.memberId).toBe(aliceMemberId);
        expect((await exchange(qr.sceneStr)).body.code).toBe(10003);
      } finally {
        wx.setPortal(MP, `${app.url}/api/v1/wechat/portal/${MP}`);
        await replica.close();
      }
    });

    it('documents every endpoint in Swagger', async () => {
      const doc = await (await fetch(`${app.url}/v3/api-docs`)).json();
      for (const path of [
        '/api/v1/app/oauth2/wechat/qrcode',
        '/api/v1/app/oauth2/qrcode/state/{state}',
        '/api/v1/app/oauth2/wechat/mobile/auth-url',
        '/api/v1/app/oauth2/auth-url/{registrationId}',
        '/api/v1/app/oauth2/callback',
        '/api/v1/app/oauth2/mp/qrcode',
        '/api/v1/app/oauth2/wechat/silent/auth-url',
        '/api/v1/app/oauth2/wechat/silent/openid',
        '/api/v1/app/oauth2/identities',
        '/api/v1/app/oauth2/identities/{id}',
        '/api/v1/app/oauth2/identities/link/{registrationId}',
        '/api/v1/wechat/portal/{appid}',
        '/login/oauth2/code/{registrationId}',
      ]) {
        expect(doc.paths[path]).toBeDefined();
      }
      expect(doc.components.schemas.OAuth2LoginResponse.properties).toHaveProperty('isNewUser');
      // The scan-login QR budget's refusal (and the per-address limit) are documented.
      expect(doc.paths['/api/v1/app/oauth2/mp/qrcode'].post.responses['429'].description).toContain(
        'WECHAT_QR_MAX_PER_HOUR',
      );
    });
  });

  describe('in-app and silent authorization (official account)', () => {
    it('in-app (snsapi_userinfo): same member as the website login through the unionid', async () => {
      const start = (await api('/api/v1/app/oauth2/wechat/mobile/auth-url')).body.data;
      expect(start).toMatchObject({
        appId: MP,
        scope: 'snsapi_userinfo',
        authType: 'mobile',
        redirectUri: `${app.url}/login/oauth2/code/wechat-mp`,
      });
      expect(start.authorizationUrl).toBe(`${app.url}/login/oauth2/authorize/wechat-mp?state=${start.state}`);
      const wechatPage = await hop(start.authorizationUrl);
      expect(wechatPage.toString().startsWith(`${wx.url}/connect/oauth2/authorize?appid=${MP}&`)).toBe(true);
      const frontend = await hop((await hop(wechatPage.toString())).toString());
      const state = frontend.searchParams.get('state')!;
      expect(state).not.toBe(start.state);
      const login = await exchange(state);
      expect(login.body.data).toMatchObject({
        memberId: aliceMemberId,
        openId: wx.openidOf(MP, wx.user),
        isNewUser: false,
      });
      expect((await exchange(state)).status).toBe(400);
    });

    it('silent (snsapi_base): the code goes to the frontend page, which gets the openid once', async () => {
      const start = (
        await api(`/api/v1/app/oauth2/wechat/silent/auth-url?redirectUri=${encodeURIComponent('/wx/pay')}`)
      ).body.data;
      expect(start).toMatchObject({
        scope: 'snsapi_base',
        authType: 'silent',
        redirectUri: 'https://www.example.com/wx/pay',
      });
      const page = await hop(start.authorizationUrl);
      expect(page.origin + page.pathname).toBe('https://www.example.com/wx/pay');
      const code = page.searchParams.get('code')!;
      const res = await api(
        `/api/v1/app/oauth2/wechat/silent/openid?code=${code}&state=${page.searchParams.get('state')}`,
      );
      expect(res.status).toBe(200);
      expect(res.body.data).toEqual({ openId: wx.openidOf(MP, wx.user), unionId: null, appId: MP });
      // The same code again: WeChat answers errcode 40163 -> 10003. The state is used up as well.
      const reused = await api(`/api/v1/app/oauth2/wechat/silent/openid?code=${code}`);
      expect(reused.status).toBe(400);
      expect(reused.body.code).toBe(10003);
      expect(
        (await api(`/api/v1/app/oauth2/wechat/silent/openid?code=${code}&state=${page.searchParams.get('state')}`)).body
          .code,
      ).toBe(10003);
    });

    it('silent: code-only calls (as the existing frontend makes) work; junk and errcodes are refused cleanly', async () => {
      const start = (await api('/api/v1/app/oauth2/wechat/silent/auth-url')).body.data;
      const page = await hop(start.authorizationUrl);
      expect(page.origin + page.pathname).toBe(FRONTEND);
      wx.failNext.set('sns/oauth2/access_token', { errcode: -1, errmsg: 'system error' });
      expect((await api(`/api/v1/app/oauth2/wechat/silent/openid?code=${page.searchParams.get('code')}`)).status).toBe(
        503,
      );
      expect((await api('/api/v1/app/oauth2/wechat/silent/openid?code=a%20b')).body.code).toBe(10000);
      expect((await api('/api/v1/app/oauth2/wechat/silent/openid')).body.code).toBe(10000);
      expect((await api('/api/v1/app/oauth2/wechat/silent/openid?code=nope')).body.code).toBe(10003);
      const fresh = await hop((await api('/api/v1/app/oauth2/wechat/silent/auth-url')).body.data.authorizationUrl);
      const ok = await api(`/api/v1/app/oauth2/wechat/silent/openid?code=${fresh.searchParams.get('code')}`);
      expect(ok.body.data.openId).toBe(wx.openidOf(MP, wx.user));
    });

    it.each(['//evil.com', '/\\evil.com', 'https://www.example.com.evil.com', 'https://www.example.com@evil.com'])(
      'refuses redirectUri %s',
      async (redirectUri) => {
        for (const path of ['wechat/silent/auth-url', 'wechat/mobile/auth-url', 'wechat/qrcode']) {
          const res = await api(`/api/v1/app/oauth2/${path}?redirectUri=${encodeURIComponent(redirectUri)}`);
          expect(res.status).toBe(400);
          expect(res.body.code).toBe(10000);
        }
      },
    );
  });
});
