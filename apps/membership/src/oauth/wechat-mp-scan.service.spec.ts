import { mkdtempSync, rmSync, writeFileSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { randomBytes } from 'crypto';
import { BusinessException, ErrorCode } from '@app/envelope';
import { SharedState } from '@app/platform';
import { FakeClock } from '../../../../test/support/clock';
import { MembershipConfig } from '../config/membership.config';
import { RunningApp, startMembership } from '../../../../test/support/apps';
import { queryRows } from '../../../../test/support/database';
import { WechatTestServer, WechatTestUser, startWechatServer } from '../../../../test/support/wechat-server';
import { OAuth2ClientRegistration } from './clients/oauth2-client-registration';
import { OAuth2ClientRegistry } from './clients/oauth2-client.registry';
import { OAuth2StateRepository, QrcodeState, randomState } from './oauth2-state.repository';
import { WechatMpScanService } from './wechat-mp-scan.service';
import { WechatQrcodeBudget } from './wechat-qrcode-budget';

const MP = 'wxmpscanspec0001';
const OTHER_MP = 'wxmpscanspec0002';
const BROWSER = 'sha256-of-the-creating-browser-binding';
/** The address the codes are asked from (its network has 5 % of the account's hour: 100 codes by default). */
const CALLER = '198.51.100.7';
/** Another browser's binding hash: a browser asking again gets its own waiting code back. */
const otherBrowser = () => randomBytes(32).toString('hex');

// The real use case against a local server speaking WeChat's official-account API
// (test/support/wechat-server.ts): parametric QR codes, access tokens and follower profiles. The scan
// events WeChat would push are handed to onScan directly, as the portal controller does.
describe('WechatMpScanService: official-account scan login', () => {
  let wx: WechatTestServer;
  let app: RunningApp;
  let scans: WechatMpScanService;
  let store: OAuth2StateRepository;
  let reg: OAuth2ClientRegistration;
  let otherReg: OAuth2ClientRegistration;
  const follower = (key: string): WechatTestUser => ({ key, nickname: `Follower ${key}`, unionid: `union-${key}` });

  let dir: string | undefined;
  beforeAll(async () => {
    wx = await startWechatServer([
      { appId: MP, secret: 'mp-secret-1', kind: 'mp', token: 'portalToken1' },
      { appId: OTHER_MP, secret: 'mp-secret-2', kind: 'mp', token: 'portalToken2' },
    ]);
    dir = mkdtempSync(join(tmpdir(), 'wechat-scan-clients-'));
    const file = join(dir, 'clients.json');
    const client = (registrationId: string, clientId: string, clientSecret: string, token: string) => ({
      registrationId,
      provider: 'wechat-mp',
      clientId,
      clientSecret,
      token,
      redirectUri: 'https://www.example.com/oauth/callback',
    });
    writeFileSync(
      file,
      JSON.stringify({
        clients: [
          client('wechat-mp', MP, 'mp-secret-1', 'portalToken1'),
          client('wechat-mp-other', OTHER_MP, 'mp-secret-2', 'portalToken2'),
        ],
      }),
    );
    app = await startMembership({
      LOG_LEVEL: 'silent',
      OAUTH2_CLIENTS_FILE: file,
      WECHAT_OPEN_BASE: wx.url,
      WECHAT_API_BASE: wx.url,
      WECHAT_MP_BASE: wx.url,
    });
    scans = app.app.get(WechatMpScanService);
    store = app.app.get(OAuth2StateRepository);
    reg = app.app.get(OAuth2ClientRegistry).get('wechat-mp');
    otherReg = app.app.get(OAuth2ClientRegistry).get('wechat-mp-other');
  });
  afterAll(async () => {
    await app?.close();
    await wx?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("creates a QR code of a fresh scene at WeChat and stores it waiting, bound to the creating browser, for WeChat's lifetime when shorter", async () => {
    const before = Date.now();
    const mine = otherBrowser();
    const qr = await scans.createQrcode(reg, 3_000_000, mine, CALLER);
    expect(wx.tickets.get(qr.ticket)).toMatchObject({ appId: MP, sceneStr: qr.sceneStr });
    expect(qr).toMatchObject({
      qrCodeUrl: expect.stringMatching(/^http:\/\/weixin\.qq\.com\/q\//),
      // WeChat keeps a temporary QR code 30 days at most (test/support/wechat-server.ts as the real API).
      expireSeconds: 2_592_000,
      showQrCodeUrl: `${wx.url}/cgi-bin/showqrcode?ticket=${encodeURIComponent(qr.ticket)}`,
    });
    const record = await store.getQrcode(qr.sceneStr);
    expect(record).toMatchObject({
      status: QrcodeState.WAITED,
      kind: 'wechat-mp-scan',
      registrationId: 'wechat-mp',
      appId: MP,
      browserHash: mine,
    });
    expect(record!.expiresAt).toBeGreaterThanOrEqual(before + 2_592_000_000);
    // Another browser gets a scene of its own (this one's waits 30 days, and would be given back to it).
    expect((await scans.createQrcode(reg, 60, otherBrowser(), CALLER)).sceneStr).not.toBe(qr.sceneStr);
  });

  it('gives a browser asking again its own waiting code back without calling WeChat, per official account', async () => {
    const creates = () => wx.calls.get('cgi-bin/qrcode/create') ?? 0;
    const mine = otherBrowser();
    const before = creates();
    const qr = await scans.createQrcode(reg, 120, mine, CALLER);
    const again = await scans.createQrcode(reg, 300, mine, CALLER);
    expect(again).toMatchObject({ sceneStr: qr.sceneStr, ticket: qr.ticket, qrCodeUrl: qr.qrCodeUrl });
    expect(again.expireSeconds).toBeLessThanOrEqual(120);
    expect(creates() - before).toBe(1);
    // Another account's code, another browser's code: new calls.
    expect((await scans.createQrcode(otherReg, 120, mine, CALLER)).sceneStr).not.toBe(qr.sceneStr);
    expect((await scans.createQrcode(reg, 120, otherBrowser(), CALLER)).sceneStr).not.toBe(qr.sceneStr);
    expect(creates() - before).toBe(3);
    // Past half its lifetime (moved here), or scanned: the browser's next ask makes a new code.
    const record = (await store.getQrcode(qr.sceneStr))!;
    await store.createQrcode(qr.sceneStr, {
      ...record,
      createdAt: Date.now() - 80_000,
      expiresAt: Date.now() + 40_000,
    });
    const fresh = await scans.createQrcode(reg, 120, mine, CALLER);
    expect(fresh.sceneStr).not.toBe(qr.sceneStr);
    expect(await scans.onScan(reg, fresh.sceneStr, wx.openidOf(MP, wx.user))).toBe('authorized');
    expect((await scans.createQrcode(reg, 120, mine, CALLER)).sceneStr).not.toBe(fresh.sceneStr);
    expect(creates() - before).toBe(5);
  });

  it('counts qrcode/create calls per account and Clock hour in shared state: two replicas (two budgets) stop at the limit together', async () => {
    const clock = new FakeClock();
    const config = Object.assign(new MembershipConfig(), { WECHAT_QR_MAX_PER_HOUR: 3 });
    const state = app.app.get(SharedState);
    const replicas = [new WechatQrcodeBudget(state, clock, config), new WechatQrcodeBudget(state, clock, config)];
    clock.advance(3_600_000); // a fresh hour of this clock, whatever this suite already spent
    // Each call from a network of its own: the account's hour is what stops them.
    const spend = (i: number, r = reg) =>
      replicas[i % 2].spend(r, `198.51.${100 + i}.1`).then(
        () => 'spent',
        (e: BusinessException) => e,
      );
    const answers = await Promise.all([0, 1, 2, 3, 4, 5].map((i) => spend(i)));
    expect(answers.filter((a) => a === 'spent')).toHaveLength(3);
    const refused = answers.find((a): a is BusinessException => a !== 'spent')!;
    expect(refused.code).toBe(ErrorCode.TOO_MANY_REQUESTS);
    expect(refused.extras.retryAfterSeconds).toBeGreaterThanOrEqual(1);
    expect(refused.extras.retryAfterSeconds).toBeLessThanOrEqual(3600);
    // Another account has its own budget; the next hour opens this one again.
    expect(await spend(0, otherReg)).toBe('spent');
    clock.advance(3_600_000);
    expect(await spend(1)).toBe('spent');
  });

  it("counts a client network's share of the hour exactly over two replicas, before the account's", async () => {
    const clock = new FakeClock();
    clock.advance(5 * 3_600_000); // an hour of the Clock no other test of this suite spends in
    // 40 codes an hour, a network 5 % of them: two.
    const config = Object.assign(new MembershipConfig(), {
      WECHAT_QR_MAX_PER_HOUR: 40,
      WECHAT_QR_NETWORK_SHARE_PERCENT: 5,
    });
    const state = app.app.get(SharedState);
    const replicas = [new WechatQrcodeBudget(state, clock, config), new WechatQrcodeBudget(state, clock, config)];
    const spend = (i: number, address: string) =>
      replicas[i % 2].spend(reg, address).then(
        () => 'spent',
        (e: BusinessException) => e.code,
      );
    // Eight /64s of one /48 at once, over both replicas: two codes.
    const answers = await Promise.all([0, 1, 2, 3, 4, 5, 6, 7].map((i) => spend(i, `2001:db8:9:${i}::1`)));
    expect(answers.filter((a) => a === 'spent')).toHaveLength(2);
    expect(answers.filter((a) => a === ErrorCode.TOO_MANY_REQUESTS)).toHaveLength(6);
    // The next /48 and an IPv4 network have shares of their own; the account spent only what was made.
    expect(await spend(0, '2001:db8:a::1')).toBe('spent');
    expect(await spend(1, '203.0.113.9')).toBe('spent');
    const hour = Math.floor(clock.now() / 3_600_000);
    expect(await state.get(`wechat:qrcode-budget:${reg.clientId}:${hour}`)).toBe('4');
  });

  it('answers a WeChat refusal to make the QR code as unavailable, naming the errcode', async () => {
    wx.failNext.set('cgi-bin/qrcode/create', { errcode: 45009, errmsg: 'reach max api daily quota limit' });
    await expect(scans.createQrcode(reg, 60, BROWSER, CALLER)).rejects.toMatchObject({
      code: ErrorCode.SERVICE_UNAVAILABLE,
      message: expect.stringContaining('45009'),
    });
  });

  it("logs the first scanner in (a subscribe event's qrscene_ key too) with the login waiting for the creating browser only", async () => {
    const anna = follower('anna');
    wx.knownUsers.push(anna);
    const qr = await scans.createQrcode(reg, 60, BROWSER, CALLER);
    expect(await scans.onScan(reg, `qrscene_${qr.sceneStr}`, wx.openidOf(MP, anna))).toBe('authorized');
    expect((await store.getQrcode(qr.sceneStr))?.status).toBe(QrcodeState.AUTHORIZED);
    const pending = await store.peekPendingLogin(qr.sceneStr);
    expect(pending).toMatchObject({
      openId: wx.openidOf(MP, anna),
      unionId: 'union-anna',
      nickname: 'Follower anna',
      loginType: 'wechat-mp',
      isNewUser: true,
      browserHash: BROWSER,
      strictBinding: true,
    });
    const [identity] = await queryRows(
      app.dbUrl,
      `SELECT provider, member_id::text AS id FROM member_identities WHERE subject = $1`,
      [wx.openidOf(MP, anna)],
    );
    expect(identity).toEqual({ provider: `wechat:${MP}`, id: pending!.memberId });

    // Only the first scanner wins: a later scan, even WeChat's retry of the same event, changes nothing.
    const bob = follower('bob');
    wx.knownUsers.push(bob);
    expect(await scans.onScan(reg, qr.sceneStr, wx.openidOf(MP, bob))).toBe('already-used');
    expect(await scans.onScan(reg, `qrscene_${qr.sceneStr}`, wx.openidOf(MP, anna))).toBe('already-used');
    expect(await store.peekPendingLogin(qr.sceneStr)).toEqual(pending);
  });

  it("answers 'unknown' for a scene it never made, one of another official account, or one of another kind of login", async () => {
    const openId = wx.openidOf(MP, wx.user);
    const ours = await scans.createQrcode(reg, 60, BROWSER, CALLER);
    const website = randomState();
    await store.createQrcode(website, {
      registrationId: 'wechat-mp',
      kind: 'wechat-qrconnect',
      expiresAt: Date.now() + 60_000,
      appId: MP,
    });
    expect(await scans.onScan(reg, randomState(), openId)).toBe('unknown');
    expect(await scans.onScan(reg, 'qrscene_../../etc', openId)).toBe('unknown');
    expect(await scans.onScan(otherReg, ours.sceneStr, wx.openidOf(OTHER_MP, wx.user))).toBe('unknown');
    expect(await scans.onScan(reg, website, openId)).toBe('unknown');
    expect((await store.getQrcode(ours.sceneStr))?.status).toBe(QrcodeState.WAITED);
    expect((await store.getQrcode(website))?.status).toBe(QrcodeState.WAITED);
  });

  it("answers 'expired' for a scene past its lifetime and logs nobody in", async () => {
    const scene = randomState();
    await store.createQrcode(scene, {
      registrationId: 'wechat-mp',
      kind: 'wechat-mp-scan',
      expiresAt: Date.now() - 1000,
      appId: MP,
      browserHash: BROWSER,
    });
    expect(await scans.onScan(reg, scene, wx.openidOf(MP, wx.user))).toBe('expired');
    expect((await store.getQrcode(scene))?.status).toBe(QrcodeState.EXPIRED);
    expect(await store.peekPendingLogin(scene)).toBeNull();
  });

  it('logs a follower in by the openid alone when WeChat refuses their profile', async () => {
    const stranger = follower('carol'); // not a follower WeChat knows: cgi-bin/user/info answers 40003
    const qr = await scans.createQrcode(reg, 60, BROWSER, CALLER);
    expect(await scans.onScan(reg, qr.sceneStr, wx.openidOf(MP, stranger))).toBe('authorized');
    expect(await store.peekPendingLogin(qr.sceneStr)).toMatchObject({
      openId: wx.openidOf(MP, stranger),
      unionId: null,
      nickname: null,
      isNewUser: true,
    });
  });

  it("cancels the scene when the scanner's member is disabled, leaving no login to exchange", async () => {
    const dave = follower('dave');
    wx.knownUsers.push(dave);
    const first = await scans.createQrcode(reg, 60, BROWSER, CALLER);
    await scans.onScan(reg, first.sceneStr, wx.openidOf(MP, dave));
    const { memberId } = (await store.peekPendingLogin(first.sceneStr))!;
    await queryRows(app.dbUrl, `UPDATE members SET status = 'disabled' WHERE id = $1`, [memberId]);

    const qr = await scans.createQrcode(reg, 60, BROWSER, CALLER);
    expect(await scans.onScan(reg, qr.sceneStr, wx.openidOf(MP, dave))).toBe('failed');
    expect((await store.getQrcode(qr.sceneStr))?.status).toBe(QrcodeState.CANCELED);
    expect(await store.peekPendingLogin(qr.sceneStr)).toBeNull();
  });
});
