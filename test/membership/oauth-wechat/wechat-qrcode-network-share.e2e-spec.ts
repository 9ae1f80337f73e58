/**
 * POST /api/v1/app/oauth2/mp/qrcode: each client network (IPv4 /24, IPv6 /48) may make at most
 * WECHAT_QR_NETWORK_SHARE_PERCENT of the official account's hour of codes (WECHAT_QR_MAX_PER_HOUR), so a
 * caller rotating through the /64s of its /56 cannot spend the hour and lock everyone out of scan login.
 * The app decides hours by a FakeClock the test moves (no sleeps).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RunningApp, startMembership } from '../../support/apps';
import { FakeClock } from '../../support/clock';
import { WechatTestServer, startWechatServer } from '../../support/wechat-server';

const MP = 'wxmpnetshare0001';
const HOUR_MS = 3_600_000;
const QR = '/api/v1/app/oauth2/mp/qrcode';

describe('WeChat scan-login QR codes: a share of the hour per client network', () => {
  let wx: WechatTestServer;
  let app: RunningApp;
  let dir: string;
  // One second before an hour of the Clock ends.
  const clock = new FakeClock((Math.floor(Date.now() / HOUR_MS) + 10) * HOUR_MS - 1000);

  beforeAll(async () => {
    wx = await startWechatServer([{ appId: MP, secret: 'mp-secret-1', kind: 'mp', token: 'portalToken1' }]);
    dir = mkdtempSync(join(tmpdir(), 'wechat-net-share-'));
    const file = join(dir, 'clients.json');
    writeFileSync(
      file,
      JSON.stringify({
        clients: [
          {
            registrationId: 'wechat-mp',
            provider: 'wechat-mp',
            clientId: MP,
            clientSecret: 'mp-secret-1',
            token: 'portalToken1',
            redirectUri: 'https://www.example.com/oauth/callback',
          },
        ],
      }),
    );
    app = await startMembership(
      {
        LOG_LEVEL: 'silent',
        OAUTH2_CLIENTS_FILE: file,
        WECHAT_OPEN_BASE: wx.url,
        WECHAT_API_BASE: wx.url,
        WECHAT_MP_BASE: wx.url,
        // Six codes an hour, a network two of them (34 %).
        WECHAT_QR_MAX_PER_HOUR: '6',
        WECHAT_QR_NETWORK_SHARE_PERCENT: '34',
      },
      { clock },
    );
  });
  afterAll(async () => {
    await app?.close();
    await wx?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** A new browser (no binding cookie) asks from `address`: a new code each time, unless refused. */
  const ask = async (address: string) => {
    const res = await fetch(app.url + QR, { method: 'POST', headers: { 'x-forwarded-for': address } });
    return { status: res.status, retryAfter: res.headers.get('retry-after'), body: await res.json() };
  };
  const creates = () => wx.calls.get('cgi-bin/qrcode/create') ?? 0;
  /** Five /64s of one /56 (so of one /48): five addresses as far as the per-address limit can tell. */
  const sixtyFours = (n: number) => Array.from({ length: n }, (_, i) => `2001:db8:7:${(0x100 + i).toString(16)}::1`);
  /** Five addresses of one IPv4 /24. */
  const ipv4s = (n: number) => Array.from({ length: n }, (_, i) => `198.51.100.${10 + i}`);

  it('stops each network at its share (429 until the hour ends) without spending the account; the next hour opens every share again', async () => {
    const start = creates();
    const v6 = [];
    for (const address of sixtyFours(5)) v6.push(await ask(address));
    const v4 = [];
    for (const address of ipv4s(5)) v4.push(await ask(address));
    expect(v6.map((r) => r.status)).toEqual([200, 200, 429, 429, 429]);
    expect(v4.map((r) => r.status)).toEqual([200, 200, 429, 429, 429]);
    expect(v6[2].body).toMatchObject({ code: 429, message: expect.stringContaining('this hour') });
    expect(v6[2].retryAfter).toBe('1'); // the hour ends in a second of the Clock
    expect(creates() - start).toBe(4);

    // The networks' refusals spent nothing of the account's hour: a third network gets the last two codes.
    expect((await ask('203.0.113.1')).status).toBe(200);
    expect((await ask('203.0.113.2')).status).toBe(200);
    expect((await ask('192.0.2.1')).status).toBe(429); // the account's six are made
    expect(creates() - start).toBe(6);

    // Across the Clock's hour: both networks have their share again.
    clock.advance(1000);
    const next = [];
    for (const address of [...sixtyFours(3).reverse(), ...ipv4s(3).reverse()]) next.push((await ask(address)).status);
    expect(next).toEqual([200, 200, 429, 200, 200, 429]);
    expect(creates() - start).toBe(10);
  });
});
