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
import { OAuth2StateStore } from './oauth2-state.store';
import { OidcFlow } from './providers/oidc.flow';
import { PassportOAuth2Flow } from './providers/passport-oauth2.flow';
import { WechatApiClientProvider } from './providers/wechat-api.client.provider';
import { WechatOAuthFlow } from './providers/wechat-oauth.flow';

/**
 * Third-party login: configured OAuth 2.0 / OIDC / WeChat clients, their states and flows, and the
 * endpoints under /api/v1/app/oauth2 (auth-url, callback, qrcode/state, identities), /login/oauth2 and
 * /api/v1/admin/auth/oauth2-providers. WeChat's own endpoints build on it in wechat/.
 */
@Module({
  imports: [AuthModule, MembersModule, SessionsModule, IdentitiesModule],
  controllers: [OAuth2Controller, OAuth2ProvidersController, OAuth2CallbackController, MemberIdentitiesController],
  providers: [OAuth2ClientRegistry, OAuth2StateStore, OAuth2LoginService, PassportOAuth2Flow, OidcFlow, WechatApiClientProvider, WechatOAuthFlow],
  exports: [OAuth2ClientRegistry, OAuth2StateStore, OAuth2LoginService, WechatOAuthFlow, WechatApiClient],
})
export class OAuthModule {}
