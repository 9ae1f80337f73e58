import { Module } from '@nestjs/common';
import { WechatApiClient } from '@app/wechat';
import { AuthModule } from '../auth/auth.module';
import { IdentitiesModule } from '../identities/identities.module';
import { MembersModule } from '../members/members.module';
import { SessionsModule } from '../sessions/sessions.module';
import { OAuth2ClientRegistry } from './clients/oauth2-client.registry';
import { MemberIdentitiesController } from './member-identities.controller';
import { OAuth2CallbackController } from './oauth2-callback.controller';
import { OAuth2Controller } from './oauth2.controller';
import { OAuth2ProvidersController } from './oauth2-providers.controller';
import { OAuth2LoginService } from './oauth2-login.service';
import { OAuth2StateRepository } from './oauth2-state.repository';
import { OidcFlow } from './providers/oidc.flow';
import { PassportOAuth2Flow } from './providers/passport-oauth2.flow';
import { WechatApiClientProvider } from './providers/wechat-api.client.provider';
import { WechatOAuthFlow } from './providers/wechat-oauth.flow';
import { WechatAccessTokenService } from './wechat-access-token.service';
import { WechatMpScanService } from './wechat-mp-scan.service';
import { WechatQrcodeBudget } from './wechat-qrcode-budget';
import { WechatOAuth2Controller } from './wechat-oauth2.controller';

/**
 * Third-party login: configured OAuth 2.0 / OIDC / WeChat clients, their states and flows, and every endpoint
 * under /api/v1/app/oauth2 (auth-url, callback, qrcode/state, identities, WeChat's website QR, in-WeChat and
 * silent authorization, official-account scan login), /login/oauth2 and /api/v1/admin/auth/oauth2-providers.
 * The official account's event portal (wechat/) completes scan logins through WechatMpScanService.
 */
@Module({
  imports: [AuthModule, MembersModule, SessionsModule, IdentitiesModule],
  controllers: [
    OAuth2Controller,
    OAuth2ProvidersController,
    OAuth2CallbackController,
    MemberIdentitiesController,
    WechatOAuth2Controller,
  ],
  providers: [
    OAuth2ClientRegistry,
    OAuth2StateRepository,
    OAuth2LoginService,
    PassportOAuth2Flow,
    OidcFlow,
    WechatApiClientProvider,
    WechatOAuthFlow,
    WechatAccessTokenService,
    WechatMpScanService,
    WechatQrcodeBudget,
  ],
  exports: [
    OAuth2ClientRegistry,
    OAuth2StateRepository,
    OAuth2LoginService,
    WechatOAuthFlow,
    WechatApiClient,
    WechatMpScanService,
  ],
})
export class OAuthModule {}
