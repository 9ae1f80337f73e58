import { Module } from '@nestjs/common';
import { AUTHENTICATOR } from '@app/auth';
import { MembersModule } from '../members/members.module';
import { SecurityModule } from '../security/security.module';
import { SessionsModule } from '../sessions/sessions.module';
import { VerificationModule } from '../verification/verification.module';
import { AccessTokenKeys } from './access-token-keys';
import { AccessTokenService } from './access-token.service';
import { AuthController } from './auth.controller';
import { FactorsModule } from '../factors/factors.module';
import { MfaChallenges } from './mfa-challenges';
import { SecondFactorController } from './second-factor.controller';
import { SecondFactorLoginService } from './second-factor-login.service';
import { LoginService } from './login.service';
import { MemberAuthenticator } from './member.authenticator';
import { PasswordLoginService } from './password-login.service';
import { PasswordService } from './password.service';
import { PhoneLoginService } from './phone-login.service';
import { TokenRefreshService } from './token-refresh.service';

/** Member authentication (/api/v1/app/auth). Exports LoginService (issueLogin for every login path, e.g. OAuth) and the app's AUTHENTICATOR. */
@Module({
  imports: [SecurityModule, MembersModule, SessionsModule, VerificationModule, FactorsModule],
  controllers: [AuthController, SecondFactorController],
  providers: [
    AccessTokenKeys,
    AccessTokenService,
    LoginService,
    MemberAuthenticator,
    { provide: AUTHENTICATOR, useExisting: MemberAuthenticator },
    PasswordLoginService,
    PhoneLoginService,
    TokenRefreshService,
    PasswordService,
    MfaChallenges,
    SecondFactorLoginService,
  ],
  exports: [LoginService, AccessTokenService, AccessTokenKeys, AUTHENTICATOR, FactorsModule],
})
export class AuthModule {}
