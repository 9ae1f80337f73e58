import { MiddlewareConsumer, Module, NestModule } from '@nestjs/common';
import { text } from 'express';
import { AuthModule } from '../auth/auth.module';
import { IdentitiesModule } from '../identities/identities.module';
import { MemberIdentitiesController } from '../identities/member-identities.controller';
import { MemberIdentitiesService } from '../identities/member-identities.service';
import { WechatAccessTokenService } from '../wechat/wechat-access-token.service';
import { WechatApiClientProvider } from '../wechat/wechat-api.client.provider';
import { WechatMpScanService } from '../wechat/wechat-mp-scan.service';
import { WechatOAuth2Controller } from '../wechat/wechat-oauth2.controller';
import { WechatOAuthFlow } from '../wechat/wechat-oauth.flow';
import { WechatPortalController } from '../wechat/wechat-portal.controller';
import { OAuth2ClientRegistry } from './clients/oauth2-client.registry';
import { OAuth2CallbackController } from './oauth2-callback.controller';
import { OAuth2Controller } from './oauth2.controller';
import { OAuth2ProvidersController } from './oauth2-providers.controller';
import { OAuth2LoginService } from './oauth2-login.service';
import { OAuth2StateStore } from './oauth2-state.store';
import { OidcFlow } from './providers/oidc.flow';
import { PassportOAuth2Flow } from './providers/passport-oauth2.flow';

/** Largest WeChat push body accepted. */
export const WECHAT_PUSH_BODY_LIMIT = '8kb';

/** Third-party login: configured OAuth 2.0 / OIDC clients, WeChat website QR, official account, identities. */
@Module({
  imports: [AuthModule, IdentitiesModule],
  controllers: [OAuth2Controller, OAuth2ProvidersController, OAuth2CallbackController, WechatOAuth2Controller, WechatPortalController, MemberIdentitiesController],
  providers: [
    OAuth2ClientRegistry,
    OAuth2StateStore,
    OAuth2LoginService,
    PassportOAuth2Flow,
    OidcFlow,
    WechatApiClientProvider,
    WechatOAuthFlow,
    WechatAccessTokenService,
    WechatMpScanService,
    MemberIdentitiesService,
  ],
})
export class OAuthModule implements NestModule {
  configure(consumer: MiddlewareConsumer): void {
    // WeChat pushes small XML documents (~1 KB, ~2 KB encrypted); only the portal reads text bodies,
    // and anything larger than 8 KB is refused (413) before it is read further.
    consumer.apply(text({ type: ['text/xml', 'application/xml', 'text/plain'], limit: WECHAT_PUSH_BODY_LIMIT })).forRoutes(WechatPortalController);
  }
}
