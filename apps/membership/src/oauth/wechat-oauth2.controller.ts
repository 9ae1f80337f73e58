import { Controller, Get, HttpCode, Post, Query, Res } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { Throttle } from '@nestjs/throttler';
import type { Response } from 'express';
import { Public } from '@app/auth';
import { ApiEnvelope, BusinessException, ErrorCode, msg } from '@app/envelope';
import { OAuth2ClientRegistry } from './clients/oauth2-client.registry';
import { ApiError } from './oauth2-errors.doc';
import { MpQrcodeQuery, SilentOpenIdQuery, WechatRedirectQuery } from './dtos/oauth2-requests.dto';
import {
  OAuth2AuthUrlResponse,
  OAuth2QRCodeResponse,
  QRCodeLoginResponse,
  WechatSilentOpenIdResponse,
} from './dtos/oauth2-responses.dto';
import { OAuth2LoginService } from './oauth2-login.service';
import { OAuth2StateRepository } from './oauth2-state.repository';
import { issueBinding } from './browser-binding';
import { ProviderAuthorizationFailed } from './providers/provider-flow';
import { ClientFacts } from '../sessions/client-facts';
import { Client } from '../sessions/client.decorator';
import { WechatOAuthFlow } from './providers/wechat-oauth.flow';
import { WechatMpScanService } from './wechat-mp-scan.service';

@ApiTags('OAuth 2.0 and WeChat login')
@Controller('api/v1/app/oauth2')
export class WechatOAuth2Controller {
  constructor(
    private readonly registry: OAuth2ClientRegistry,
    private readonly logins: OAuth2LoginService,
    private readonly scans: WechatMpScanService,
    private readonly flow: WechatOAuthFlow,
    private readonly store: OAuth2StateRepository,
  ) {}

  @Public()
  @Throttle({ default: { limit: 30, ttl: 60_000 } })
  @Get('wechat/qrcode')
  @ApiOperation({
    summary: 'WeChat website QR login (open platform, snsapi_login)',
    description:
      'Returns the qrconnect URL and a state, and sets the HttpOnly `oauth2_binding` cookie: call it same-origin or with credentials. ' +
      'The desktop page polls `/qrcode/state/{state}`; after the user confirms on the phone, WeChat redirects this browser to the server callback ' +
      '(refused, 403, in any other browser), the state becomes AUTHORIZED (2) and is exchanged once at `/callback?state=` by this browser only.',
  })
  @ApiEnvelope(OAuth2QRCodeResponse)
  @ApiError(400, 10000, 'redirectUri is not an allowed address')
  @ApiError(404, 404, 'no WeChat website client configured')
  async qrcode(
    @Query() q: WechatRedirectQuery,
    @Client() client: ClientFacts,
    @Res({ passthrough: true }) res: Response,
  ): Promise<OAuth2QRCodeResponse> {
    const reg = this.registry.pick(['wechat-open'], q.registrationId);
    const { authorization: r, setCookie } = await this.logins.start(reg, client, {
      kind: 'wechat-qrconnect',
      redirectUri: q.redirectUri,
    });
    res.append('Set-Cookie', setCookie);
    return {
      authorizationUri: r.authorizationUrl,
      state: r.state,
      appId: r.appId,
      redirectUri: r.redirectUri,
      scope: r.scope,
    };
  }

  @Public()
  @Throttle({ default: { limit: 30, ttl: 60_000 } })
  @Get('wechat/mobile/auth-url')
  @ApiOperation({
    summary: 'In-WeChat authorization URL (official account, snsapi_userinfo)',
    description:
      'Open it inside WeChat (it goes through `{base_url}/login/oauth2/authorize/{id}`, which binds the state to that browser); WeChat returns ' +
      'to the server callback, which redirects to the frontend page with `?state=` to exchange.',
  })
  @ApiEnvelope(OAuth2AuthUrlResponse)
  @ApiError(400, 10000, 'redirectUri is not an allowed address')
  @ApiError(404, 404, 'no official account configured')
  async mobile(
    @Query() q: WechatRedirectQuery,
    @Client() client: ClientFacts,
    @Res({ passthrough: true }) res: Response,
  ): Promise<OAuth2AuthUrlResponse> {
    const reg = this.registry.pick(['wechat-mp'], q.registrationId);
    const started = await this.logins.start(reg, client, {
      kind: 'wechat-mobile',
      redirectUri: q.redirectUri,
      viaBegin: true,
    });
    res.append('Set-Cookie', started.setCookie);
    return started.authorization;
  }

  @Public()
  @Throttle({ default: { limit: 30, ttl: 60_000 } })
  @Get('wechat/silent/auth-url')
  @ApiOperation({
    summary: 'Silent authorization URL (official account, snsapi_base)',
    description:
      'WeChat returns straight to the (allowlisted) frontend page with `?code=&state=`; the page then calls `/wechat/silent/openid?code=`.',
  })
  @ApiEnvelope(OAuth2AuthUrlResponse)
  @ApiError(400, 10000, 'redirectUri is not an allowed address')
  @ApiError(404, 404, 'no official account configured')
  async silent(
    @Query() q: WechatRedirectQuery,
    @Client() client: ClientFacts,
    @Res({ passthrough: true }) res: Response,
  ): Promise<OAuth2AuthUrlResponse> {
    const reg = this.registry.pick(['wechat-mp'], q.registrationId);
    const started = await this.logins.start(reg, client, { kind: 'wechat-silent', redirectUri: q.redirectUri });
    res.append('Set-Cookie', started.setCookie);
    return started.authorization;
  }

  @Public()
  @Throttle({ default: { limit: 30, ttl: 60_000 } })
  @Get('wechat/silent/openid')
  @ApiOperation({
    summary: 'OpenID of a silent authorization code',
    description:
      'Exchanges the snsapi_base code (once) for the openid. A code WeChat refuses (errcode 40029, 40163) answers 10003.',
  })
  @ApiEnvelope(WechatSilentOpenIdResponse)
  @ApiError(400, 10000, 'missing or malformed code')
  @ApiError(400, 10003, 'WeChat refused the code (used or expired), or the state is unknown')
  @ApiError(503, 503, 'WeChat API failed (errcode in message)')
  async silentOpenId(@Query() q: SilentOpenIdQuery): Promise<WechatSilentOpenIdResponse> {
    let reg = this.registry.pick(['wechat-mp'], q.registrationId);
    if (q.state !== undefined) {
      const stored = await this.store.takeAuthorization(q.state);
      if (!stored || stored.kind !== 'wechat-silent')
        throw new BusinessException(ErrorCode.CODE_INVALID, msg('oauth.stateRefused'));
      reg = this.registry.get(stored.registrationId);
    }
    try {
      const profile = await this.flow.profileFromCode(reg, q.code, 'snsapi_base');
      return { openId: profile.subject, unionId: profile.unionId ?? null, appId: reg.clientId };
    } catch (e) {
      if (!(e instanceof ProviderAuthorizationFailed)) throw e;
      if (e.error === 'invalid_grant') throw new BusinessException(ErrorCode.CODE_INVALID, e.description);
      throw new BusinessException(ErrorCode.SERVICE_UNAVAILABLE, e.description);
    }
  }

  @Public()
  // A code lives 60..300 s and a browser asking again gets its own back, so a browser needs about two a
  // minute at most; 10 leaves room for a few browsers behind one NAT address, and keeps one address to
  // 600 an hour, under the account's WECHAT_QR_MAX_PER_HOUR; a network's share of it (wechat-qrcode-budget.ts,
  // checked after this) bounds a caller holding many addresses.
  @Throttle({ default: { limit: 10, ttl: 60_000 } })
  @Post('mp/qrcode')
  @HttpCode(200)
  @ApiOperation({
    summary: 'Official-account scan login QR code',
    description:
      'Creates a temporary parametric QR code with a random scene. Poll `/qrcode/state/{sceneStr}`: WAITED (0) until the user scans, ' +
      'SCANNED (1) / AUTHORIZED (2) once WeChat pushes the SCAN or subscribe event, EXPIRED (4) after `expireSeconds`. Exchange `sceneStr` once at `/callback`, ' +
      'from the same browser: the answer sets the HttpOnly `oauth2_binding` cookie the exchange must show (call same-origin or with credentials). ' +
      'The same browser (cookie) asking again while its code is unscanned and has at least half its lifetime left gets that code back, ' +
      '`expireSeconds` being the time left. New codes are limited to 10 a minute per client address, `WECHAT_QR_NETWORK_SHARE_PERCENT` of the hour per client ' +
      'network (IPv4 /24, IPv6 /48) and `WECHAT_QR_MAX_PER_HOUR` per official account.',
  })
  @ApiEnvelope(QRCodeLoginResponse)
  @ApiError(400, 10000, 'expireSeconds outside 60..300')
  @ApiError(404, 404, 'no official account configured for appId')
  @ApiError(
    429,
    429,
    'more than 10 a minute from this address, this client network made its share of the hour (WECHAT_QR_NETWORK_SHARE_PERCENT), or the official account made WECHAT_QR_MAX_PER_HOUR codes this hour (Retry-After header)',
  )
  @ApiError(503, 503, 'WeChat API failed (errcode in message)')
  mpQrcode(
    @Query() q: MpQrcodeQuery,
    @Client() client: ClientFacts,
    @Res({ passthrough: true }) res: Response,
  ): Promise<QRCodeLoginResponse> {
    const reg = this.registry.pick(['wechat-mp'], q.appId);
    // Sent even when WeChat then fails: the browser keeps one binding across retries (oauth/browser-binding.ts).
    const binding = issueBinding(client);
    res.append('Set-Cookie', binding.setCookie);
    return this.scans.createQrcode(reg, q.expireSeconds ?? 300, binding.hash, client.ip);
  }
}
