import { Body, Controller, Get, HttpCode, Logger, Param, Post, Query, Res } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { SkipThrottle } from '@nestjs/throttler';
import type { Response } from 'express';
import { Public } from '@app/auth';
import { BusinessException, ErrorCode, msg, RawResponse } from '@app/envelope';
import {
  WechatMessageCrypto,
  WechatMessageRejected,
  buildWechatXml,
  parseWechatXml,
  pushReplayKey,
  verifyPushSignature,
} from '@app/wechat';
import { MembershipConfig } from '../config/membership.config';
import { OAuth2ClientRegistration } from '../oauth/clients/oauth2-client-registration';
import { OAuth2ClientRegistry } from '../oauth/clients/oauth2-client.registry';
import { OAuth2StateRepository } from '../oauth/oauth2-state.repository';
import { ScanOutcome, WechatMpScanService } from '../oauth/wechat-mp-scan.service';
import { ApiPortalHandshake, ApiPortalPush } from './wechat-portal.doc';

const REPLIES: Record<ScanOutcome, string | null> = {
  authorized: 'Login confirmed. 登录成功',
  expired: 'This QR code has expired; refresh the page and scan again. 二维码已过期',
  'already-used': 'This QR code has already been used. 二维码已被使用',
  failed: 'Login failed, please try again. 登录失败',
  unknown: null,
};

/** The official account's server URL: the signature handshake and event pushes (plain or AES). */
@ApiTags('WeChat official account portal')
@Controller('api/v1/wechat/portal')
export class WechatPortalController {
  private readonly log = new Logger('WechatPortal');

  constructor(
    private readonly registry: OAuth2ClientRegistry,
    private readonly scans: WechatMpScanService,
    private readonly store: OAuth2StateRepository,
    private readonly config: MembershipConfig,
  ) {}

  @Public()
  @RawResponse()
  @SkipThrottle()
  @Get(':appid')
  @ApiPortalHandshake()
  handshake(@Param('appid') appid: string, @Query() q: Record<string, unknown>, @Res() res: Response): void {
    const reg = this.registration(appid);
    this.verify(reg, q);
    const echostr = typeof q.echostr === 'string' ? q.echostr : '';
    if (!/^[A-Za-z0-9_-]{1,128}$/.test(echostr))
      throw new BusinessException(ErrorCode.BAD_REQUEST, msg('wechat.echostrMalformed'));
    res.type('text/plain').send(echostr);
  }

  @Public()
  @RawResponse()
  @SkipThrottle()
  @Post(':appid')
  @HttpCode(200)
  @ApiPortalPush()
  async push(
    @Param('appid') appid: string,
    @Query() q: Record<string, unknown>,
    @Body() body: unknown,
    @Res() res: Response,
  ): Promise<void> {
    const reg = this.registration(appid);
    this.verify(reg, q);
    if (typeof body !== 'string' || !body.trim())
      throw new BusinessException(ErrorCode.BAD_REQUEST, msg('wechat.xmlExpected'));
    const timestamp = String(q.timestamp);
    const nonce = String(q.nonce);
    let crypto: WechatMessageCrypto | undefined;
    let message: Record<string, string>;
    try {
      if (reg.encodingAesKey) {
        // Safe mode (and compatible mode, which adds a plaintext copy): only the encrypted part, covered
        // by msg_signature and carrying our appid, is trusted. A push without it is refused: the URL
        // signature alone does not cover the body.
        if (q.encrypt_type !== 'aes') throw new WechatMessageRejected('plaintext');
        crypto = new WechatMessageCrypto(reg.token!, reg.encodingAesKey, reg.clientId);
        const outer = parseWechatXml(body);
        if (!outer.Encrypt) throw new WechatMessageRejected('format');
        crypto.verifyMessageSignature(
          typeof q.msg_signature === 'string' ? q.msg_signature : undefined,
          timestamp,
          nonce,
          outer.Encrypt,
        );
        message = parseWechatXml(crypto.decrypt(outer.Encrypt));
      } else {
        if (q.encrypt_type === 'aes')
          throw new BusinessException(ErrorCode.BAD_REQUEST, msg('wechat.safeModeNotConfigured'));
        message = parseWechatXml(body);
      }
    } catch (e) {
      throw this.rejected(e);
    }
    // Each signed (timestamp, nonce) pair is accepted once, across replicas, for as long as its
    // timestamp can pass the window check: a captured push URL cannot be replayed with another body.
    const windowMs = this.config.WECHAT_PUSH_WINDOW_SECONDS * 1000;
    if (!(await this.store.claim(pushReplayKey(reg.clientId, timestamp, nonce), 2 * windowMs + 60_000))) {
      throw this.rejected(new WechatMessageRejected('replay'));
    }
    const reply = await this.handle(reg, message);
    if (!reply || !message.FromUserName) {
      res.type('text/plain').send('success');
      return;
    }
    const xml = buildWechatXml({
      ToUserName: message.FromUserName,
      FromUserName: message.ToUserName ?? '',
      CreateTime: Math.floor(Date.now() / 1000),
      MsgType: 'text',
      Content: reply,
    });
    res.type('text/xml').send(crypto ? crypto.encryptReply(xml, timestamp, nonce) : xml);
  }

  /** Processes a message once (WeChat retries up to three times within 15 s); returns a passive reply text. */
  private async handle(reg: OAuth2ClientRegistration, m: Record<string, string>): Promise<string | null> {
    const dedupKey = m.MsgId
      ? `wechat-msg:${reg.clientId}:${m.MsgId}`
      : `wechat-msg:${reg.clientId}:${m.FromUserName}:${m.CreateTime}:${m.Event}:${m.EventKey}`;
    if (!(await this.store.claim(dedupKey, 5 * 60_000))) return null;
    if (m.MsgType !== 'event' || !m.FromUserName) return null;
    const event = (m.Event ?? '').toLowerCase();
    const isLoginScene =
      (event === 'scan' && !!m.EventKey) || (event === 'subscribe' && (m.EventKey ?? '').startsWith('qrscene_'));
    if (!isLoginScene) return null;
    try {
      const outcome = await this.scans.onScan(reg, m.EventKey, m.FromUserName);
      this.log.log(`${reg.registrationId}: ${m.Event} event -> ${outcome}`);
      return REPLIES[outcome];
    } catch (e) {
      // Let WeChat's retry of this push be processed instead of swallowed as a duplicate.
      await this.store.release(dedupKey).catch(() => undefined);
      throw e;
    }
  }

  private registration(appid: string): OAuth2ClientRegistration {
    const reg = this.registry.all().find((r) => r.provider === 'wechat-mp' && r.clientId === appid);
    if (!reg) throw new BusinessException(ErrorCode.NOT_FOUND, msg('wechat.unknownAccount'));
    return reg;
  }

  private verify(reg: OAuth2ClientRegistration, q: Record<string, unknown>): void {
    try {
      verifyPushSignature(
        reg.token!,
        { signature: str(q.signature), timestamp: str(q.timestamp), nonce: str(q.nonce) },
        this.config.WECHAT_PUSH_WINDOW_SECONDS,
      );
    } catch (e) {
      throw this.rejected(e);
    }
  }

  private rejected(e: unknown): Error {
    if (!(e instanceof WechatMessageRejected)) return e as Error;
    this.log.warn(`push rejected: ${e.reason}`);
    return e.reason === 'format'
      ? new BusinessException(ErrorCode.BAD_REQUEST, msg('wechat.malformedRequest'))
      : new BusinessException(ErrorCode.FORBIDDEN, msg('wechat.checkFailed', { check: e.reason }));
  }
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}
