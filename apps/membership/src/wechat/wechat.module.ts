import { MiddlewareConsumer, Module, NestModule } from '@nestjs/common';
import { text } from 'express';
import { OAuthModule } from '../oauth/oauth.module';
import { WechatAccessTokenService } from './wechat-access-token.service';
import { WechatMpScanService } from './wechat-mp-scan.service';
import { WechatOAuth2Controller } from './wechat-oauth2.controller';
import { WechatPortalController } from './wechat-portal.controller';

/** Largest WeChat push body accepted. */
export const WECHAT_PUSH_BODY_LIMIT = '8kb';

/**
 * WeChat login on top of oauth/: website QR, in-WeChat and silent authorization
 * (/api/v1/app/oauth2/wechat/*), official-account scan login (/api/v1/app/oauth2/mp/qrcode) and the
 * official account's event portal (/api/v1/wechat/portal/{appid}).
 */
@Module({
  imports: [OAuthModule],
  controllers: [WechatOAuth2Controller, WechatPortalController],
  providers: [WechatAccessTokenService, WechatMpScanService],
})
export class WechatModule implements NestModule {
  configure(consumer: MiddlewareConsumer): void {
    // WeChat pushes small XML documents (~1 KB, ~2 KB encrypted); only the portal reads text bodies,
    // and anything larger than 8 KB is refused (413) before it is read further.
    consumer.apply(text({ type: ['text/xml', 'application/xml', 'text/plain'], limit: WECHAT_PUSH_BODY_LIMIT })).forRoutes(WechatPortalController);
  }
}
