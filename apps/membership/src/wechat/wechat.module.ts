import { MiddlewareConsumer, Module, NestModule } from '@nestjs/common';
import { text } from 'express';
import { OAuthModule } from '../oauth/oauth.module';
import { WechatPortalController } from './wechat-portal.controller';

/** Largest WeChat push body accepted. */
export const WECHAT_PUSH_BODY_LIMIT = '8kb';

/**
 * The official account's event portal (/api/v1/wechat/portal/{appid}): WeChat's handshake and its pushes, which
 * complete official-account scan logins (oauth/wechat-mp-scan.service.ts).
 */
@Module({
  imports: [OAuthModule],
  controllers: [WechatPortalController],
})
export class WechatModule implements NestModule {
  configure(consumer: MiddlewareConsumer): void {
    // WeChat pushes small XML documents (~1 KB, ~2 KB encrypted); only the portal reads text bodies,
    // and anything larger than 8 KB is refused (413) before it is read further.
    consumer
      .apply(text({ type: ['text/xml', 'application/xml', 'text/plain'], limit: WECHAT_PUSH_BODY_LIMIT }))
      .forRoutes(WechatPortalController);
  }
}
