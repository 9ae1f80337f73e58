import { Body, Controller, Get, HttpCode, Logger, Param, Post, Query, Res } from '@nestjs/common';
import { ApiBody, ApiConsumes, ApiOperation, ApiParam, ApiProduces, ApiQuery, ApiResponse, ApiTags } from '@nestjs/swagger';
import { SkipThrottle } from '@nestjs/throttler';
import type { Response } from 'express';
import { Public } from '@app/auth';
import { BusinessException, ErrorCode, msg, RawResponse } from '@app/envelope';
import { WechatMessageCrypto, WechatMessageRejected, buildWechatXml, parseWechatXml, pushReplayKey, verifyPushSignature } from '@app/wechat';
import { MembershipConfig } from '../config/membership.config';
import { OAuth2ClientRegistration } from '../oauth/clients/oauth2-client-registration';
import { OAuth2ClientRegistry } from '../oauth/clients/oauth2-client.registry';
import { OAuth2StateStore } from '../oauth/oauth2-state.store';
import { ScanOutcome, WechatMpScanService } from './wechat-mp-scan.service';

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
    private readonly store: OAuth2StateStore,
    private readonly config: MembershipConfig,
  ) {}

  @Public()
  @RawResponse()
  @SkipThrottle()
  @Get(':appid')
  @ApiOperation({
    summary: 'Server-URL handshake',
    description: 'WeChat checks the configured URL: with a valid `signature` (sha1 of token, timestamp, nonce; timestamp within the window) the body is `echostr` as plain text.',
  })
  @ApiParam({ name: 'appid', example: 'wx9f8e7d6c5b4a3f2e' })
  @ApiQuery({ name: 'signature', example: '0f9d5e3a2c1b4d6e8f7a9b0c1d2e3f4a5b6c7d8e' })
  @ApiQuery({ name: 'timestamp', example: '1763782800' })
  @ApiQuery({ name: 'nonce', example: '1388296150' })
  @ApiQuery({ name: 'echostr', example: '5837397520665436492' })
  @ApiProduces('text/plain')
  @ApiResponse({ status: 200, description: 'The echostr, as text' })
  @ApiResponse({ status: 403, description: 'Signature or timestamp rejected (envelope)' })
  handshake(@Param('appid') appid: string, @Query() q: Record<string, unknown>, @Res() res: Response): void {
    const reg = this.registration(appid);
    this.verify(reg, q);
    const echostr = typeof q.echostr === 'string' ? q.echostr : '';
    if (!/^[A-Za-z0-9_-]{1,128}$/.test(echostr)) throw new BusinessException(ErrorCode.BAD_REQUEST, msg('wechat.echostrMalformed'));
    res.type('text/plain').send(echostr);
  }

  @Public()
  @RawResponse()
  @SkipThrottle()
  @Post(':appid')
  @HttpCode(200)
  @ApiOperation({
    summary: 'Event push (SCAN, subscribe with qrscene_)',
    description:
      'Signed pushes. With an EncodingAESKey configured (safe or compatible mode) only AES pushes (`encrypt_type=aes`) whose `msg_signature` ' +
      '(sha1 of sorted token, timestamp, nonce, Encrypt) matches and whose decrypted appid is this account are accepted; plaintext is refused (403). ' +
      'Without a key (plaintext mode) the body is read as is. Each (timestamp, nonce) pair is accepted once (403 on a replay); bodies over 8 KB get 413. ' +
      'Repeated pushes (WeChat retries, new nonce) are processed once. ' +
      'SCAN and subscribe events carrying a login scene move it WAITED -> SCANNED -> AUTHORIZED; the answer is `success` or a passive text reply.',
  })
  @ApiParam({ name: 'appid', example: 'wx9f8e7d6c5b4a3f2e' })
  @ApiQuery({ name: 'signature', example: '0f9d5e3a2c1b4d6e8f7a9b0c1d2e3f4a5b6c7d8e' })
  @ApiQuery({ name: 'timestamp', example: '1763782800' })
  @ApiQuery({ name: 'nonce', example: '1388296150' })
  @ApiQuery({ name: 'openid', required: false, example: 'oGZUI0egBJY1zhBYw2KhdUfwVJJE' })
  @ApiQuery({ name: 'encrypt_type', required: false, example: 'aes', description: 'Safe mode: the body carries `Encrypt`' })
  @ApiQuery({ name: 'msg_signature', required: false, example: '3d7f6b0c5a9e8d1f2a4b6c8e0f1a3b5c7d9e1f2a' })
  @ApiResponse({ status: 403, description: 'Signature, timestamp, replay, plaintext-in-safe-mode or AES check failed (envelope)' })
  @ApiResponse({ status: 413, description: 'Body larger than 8 KB (envelope)' })
  @ApiConsumes('text/xml')
  @ApiBody({
    schema: {
      type: 'string',
      example:
        '<xml><ToUserName><![CDATA[gh_1234567890ab]]></ToUserName><FromUserName><![CDATA[oGZUI0egBJY1zhBYw2KhdUfwVJJE]]></FromUserName><CreateTime>1763782800</CreateTime><MsgType><![CDATA[event]]></MsgType><Event><![CDATA[SCAN]]></Event><EventKey><![CDATA[pX3q9Lr2mVb8Kc1Tz7Wn4Yd6Hs0Ja5Fe]]></EventKey><Ticket><![CDATA[gQH47joAAAAAAAAAASxodHRw]]></Ticket></xml>',
    },
  })
  @ApiProduces('text/plain', 'text/xml')
  @ApiResponse({ status: 200, description: '`success`, or a (possibly encrypted) passive text reply' })
  async push(@Param('appid') appid: string, @Query() q: Record<string, unknown>, @Body() body: unknown, @Res() res: Response): Promise<void> {
    const reg = this.registration(appid);
    this.verify(reg, q);
    if (typeof body !== 'string' || !body.trim()) throw new BusinessException(ErrorCode.BAD_REQUEST, msg('wechat.xmlExpected'));
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
        crypto.verifyMessageSignature(typeof q.msg_signature === 'string' ? q.msg_signature : undefined, timestamp, nonce, outer.Encrypt);
        message = parseWechatXml(crypto.decrypt(outer.Encrypt));
      } else {
        if (q.encrypt_type === 'aes') throw new BusinessException(ErrorCode.BAD_REQUEST, msg('wechat.safeModeNotConfigured'));
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
    const dedupKey = m.MsgId ? `wechat-msg:${reg.clientId}:${m.MsgId}` : `wechat-msg:${reg.clientId}:${m.FromUserName}:${m.CreateTime}:${m.Event}:${m.EventKey}`;
    if (!(await this.store.claim(dedupKey, 5 * 60_000))) return null;
    if (m.MsgType !== 'event' || !m.FromUserName) return null;
    const event = (m.Event ?? '').toLowerCase();
    const isLoginScene = (event === 'scan' && !!m.EventKey) || (event === 'subscribe' && (m.EventKey ?? '').startsWith('qrscene_'));
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
    return e.reason === 'format' ? new BusinessException(ErrorCode.BAD_REQUEST, msg('wechat.malformedRequest')) : new BusinessException(ErrorCode.FORBIDDEN, msg('wechat.checkFailed', { check: e.reason }));
  }
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}
