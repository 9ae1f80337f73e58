import { Module } from '@nestjs/common';
import { AUTHENTICATOR } from '@app/auth';
import { ApiKeysRepository } from './api-keys.repository';
import { ApiKeysService } from './api-keys.service';
import { DevelopmentKey } from './development-key';
import { GatewayAuthenticator } from './gateway.authenticator';
import { KeysController } from './keys.controller';
import { MembershipJwks } from './membership-jwks';
import { MembershipTokens } from './membership-tokens';
import { LimitsModule } from '../limits/limits.module';

/** API keys: admin API, the gateway's authenticator (API keys, the admin token, membership operator tokens), the dev key. */
@Module({
  imports: [LimitsModule],
  controllers: [KeysController],
  providers: [
    ApiKeysRepository,
    ApiKeysService,
    MembershipJwks,
    MembershipTokens,
    GatewayAuthenticator,
    { provide: AUTHENTICATOR, useExisting: GatewayAuthenticator },
    DevelopmentKey,
  ],
  exports: [AUTHENTICATOR, ApiKeysService, ApiKeysRepository, GatewayAuthenticator],
})
export class KeysModule {}
