import { Injectable, Logger } from '@nestjs/common';
import { BusinessException, ErrorCode, msg } from '@app/envelope';
import { WechatApiClient, WechatApiError } from '@app/wechat';
import { OAuth2ClientRegistration } from './clients/oauth2-client-registration';
import { QRCodeLoginResponse } from './dtos/oauth2-responses.dto';
import { OAuth2LoginService } from './oauth2-login.service';
import { OAuth2StateRepository, QrcodeState, randomState } from './oauth2-state.repository';
import { WechatAccessTokenService } from './wechat-access-token.service';
import { WechatQrcodeBudget } from './wechat-qrcode-budget';

export type ScanOutcome = 'authorized' | 'expired' | 'unknown' | 'already-used' | 'failed';

/** Official-account scan login: parametric QR codes and the SCAN / subscribe events they trigger. */
@Injectable()
export class WechatMpScanService {
  private readonly log = new Logger('WechatMpScan');

  constructor(
    private readonly wechat: WechatApiClient,
    private readonly tokens: WechatAccessTokenService,
    private readonly store: OAuth2StateRepository,
    private readonly logins: OAuth2LoginService,
    private readonly budget: WechatQrcodeBudget,
  ) {}

  /**
   * `browserHash`: the creating browser's binding (browser-binding.ts); only it may exchange the login.
   * Each new code spends one call of the account's daily qrcode/create quota, so a browser asking again
   * gets its code back while nobody has scanned it and at least half its lifetime is left (with
   * `expireSeconds` now the time left): reloads, retries and tabs of one browser cost WeChat nothing, and
   * a browser asking without pause makes at most two codes per lifetime. Only the hash of the browser's
   * own HttpOnly nonce finds its code. New codes are counted by WechatQrcodeBudget, per account and per
   * the network of `clientIp` (the caller's address under TRUST_PROXY).
   */
  async createQrcode(
    reg: OAuth2ClientRegistration,
    expireSeconds: number,
    browserHash: string,
    clientIp: string,
  ): Promise<QRCodeLoginResponse> {
    const again = await this.browserQrcode(reg, browserHash);
    if (again) return again;
    await this.budget.spend(reg, clientIp);
    const sceneStr = randomState();
    let qr;
    try {
      qr = await this.tokens.withToken(reg, (token) =>
        this.wechat.createTemporaryQrcode(token, sceneStr, expireSeconds),
      );
    } catch (e) {
      if (!(e instanceof WechatApiError)) throw e;
      this.log.warn(`${reg.registrationId}: ${e.api} errcode ${e.errcode}`);
      throw new BusinessException(ErrorCode.SERVICE_UNAVAILABLE, msg('wechat.qrFailed', { errcode: e.errcode }));
    }
    const lifetime = Math.min(expireSeconds, qr.expire_seconds || expireSeconds);
    // QR records expire by Date.now, as OAuth2StateRepository.getQrcode reads them.
    const createdAt = Date.now();
    await this.store.createQrcode(sceneStr, {
      registrationId: reg.registrationId,
      kind: 'wechat-mp-scan',
      expiresAt: createdAt + lifetime * 1000,
      appId: reg.clientId,
      browserHash,
      ticket: qr.ticket,
      qrCodeUrl: qr.url,
      createdAt,
    });
    await this.store.saveBrowserQrcode(reg.clientId, browserHash, sceneStr, lifetime * 1000);
    return this.answer(sceneStr, qr.url, qr.ticket, lifetime);
  }

  /** The browser's last code of this account while it can still be shown (waiting, half its lifetime left), else null. */
  private async browserQrcode(reg: OAuth2ClientRegistration, browserHash: string): Promise<QRCodeLoginResponse | null> {
    const sceneStr = await this.store.browserQrcode(reg.clientId, browserHash);
    const record = sceneStr ? await this.store.getQrcode(sceneStr) : null;
    if (!sceneStr || !record || record.status !== QrcodeState.WAITED || record.browserHash !== browserHash) return null;
    if (!record.ticket || !record.qrCodeUrl || record.createdAt === undefined) return null;
    const leftMs = record.expiresAt - Date.now();
    if (leftMs * 2 < record.expiresAt - record.createdAt) return null;
    return this.answer(sceneStr, record.qrCodeUrl, record.ticket, Math.floor(leftMs / 1000));
  }

  private answer(sceneStr: string, qrCodeUrl: string, ticket: string, expireSeconds: number): QRCodeLoginResponse {
    return { sceneStr, qrCodeUrl, ticket, expireSeconds, showQrCodeUrl: this.wechat.showQrcodeUrl(ticket) };
  }

  /**
   * A SCAN (already following) or subscribe (`qrscene_` + scene) event: WAITED -> SCANNED -> AUTHORIZED,
   * with the login stored under the scene for the polling page. Only the first scanner of a scene wins.
   */
  async onScan(reg: OAuth2ClientRegistration, eventKey: string, openId: string): Promise<ScanOutcome> {
    const sceneStr = eventKey.startsWith('qrscene_') ? eventKey.slice('qrscene_'.length) : eventKey;
    const record = await this.store.getQrcode(sceneStr);
    if (!record || record.kind !== 'wechat-mp-scan' || record.appId !== reg.clientId) return 'unknown';
    if (record.status === QrcodeState.EXPIRED) return 'expired';
    if (record.status !== QrcodeState.WAITED) return 'already-used';
    if (!(await this.store.claim(`scene:${sceneStr}`, Math.max(1000, record.expiresAt - Date.now()))))
      return 'already-used';
    try {
      return await this.authorizeScene(reg, sceneStr, openId, record.browserHash);
    } catch (e) {
      // Unexpected failure (database, network): reopen the scene so WeChat's retry can finish it.
      await this.store.release(`scene:${sceneStr}`).catch(() => undefined);
      await this.store.setQrcodeStatus(sceneStr, QrcodeState.WAITED).catch(() => undefined);
      throw e;
    }
  }

  private async authorizeScene(
    reg: OAuth2ClientRegistration,
    sceneStr: string,
    openId: string,
    browserHash: string | undefined,
  ): Promise<ScanOutcome> {
    await this.store.setQrcodeStatus(sceneStr, QrcodeState.SCANNED);
    let unionId: string | null = null;
    let nickname: string | null = null;
    let avatarUrl: string | null = null;
    try {
      const info = await this.tokens.withToken(reg, (token) => this.wechat.mpUserInfo(token, openId));
      unionId = info.unionid ?? null;
      nickname = info.nickname || null;
      avatarUrl = info.headimgurl || null;
    } catch (e) {
      // The openid alone still identifies the follower; only the unionid join is lost.
      if (!(e instanceof WechatApiError)) throw e;
      this.log.warn(`${reg.registrationId}: user info failed (errcode ${e.errcode}); logging in by openid only`);
    }
    try {
      const pending = await this.logins.pendingLogin(reg, {
        provider: `wechat:${reg.clientId}`,
        subject: openId,
        registrationId: reg.registrationId,
        unionId,
        nickname,
        avatarUrl,
      });
      // The scene id travels through WeChat and the polling URL: only the page that created it may exchange it.
      await this.store.savePendingLogin(sceneStr, {
        ...pending,
        loginType: 'wechat-mp',
        browserHash,
        strictBinding: true,
      });
      await this.store.setQrcodeStatus(sceneStr, QrcodeState.AUTHORIZED);
      return 'authorized';
    } catch (e) {
      this.log.warn(`${reg.registrationId}: scan login failed: ${(e as Error).message}`);
      await this.store.setQrcodeStatus(sceneStr, QrcodeState.CANCELED);
      return 'failed';
    }
  }
}
