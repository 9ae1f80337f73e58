import { Module } from '@nestjs/common';
import { MembersModule } from '../members/members.module';
import { SecurityModule } from '../security/security.module';
import { SessionsModule } from '../sessions/sessions.module';
import { SiteConfigModule } from '../site-config/site-config.module';
import { VerificationModule } from '../verification/verification.module';
import { FactorCipher } from './factor-cipher';
import { FactorNotices } from './factor-notices';
import { FactorSettingsService } from './factor-settings.service';
import { FactorsRepository } from './factors.repository';
import { PasskeysService } from './passkeys.service';
import { RecoveryCodesService } from './recovery-codes.service';
import { Requesters } from './requester';
import { SecondFactorsService } from './second-factors.service';
import { SecurityFactorsController } from './security-factors.controller';
import { StepUpService } from './step-up.service';
import { TotpService } from './totp.service';
import { WebauthnSettings } from './webauthn-settings';

/**
 * Second factors (authenticator app, passkeys, recovery codes), step-up, and the member's factor
 * endpoints under /api/v1/app/security. Sign-in with a factor is auth/'s (it imports this module).
 */
@Module({
  imports: [MembersModule, SessionsModule, SecurityModule, SiteConfigModule, VerificationModule],
  controllers: [SecurityFactorsController],
  providers: [
    FactorCipher,
    FactorsRepository,
    TotpService,
    RecoveryCodesService,
    PasskeysService,
    WebauthnSettings,
    FactorNotices,
    SecondFactorsService,
    StepUpService,
    FactorSettingsService,
    Requesters,
  ],
  exports: [SecondFactorsService, StepUpService, FactorSettingsService, PasskeysService, FactorNotices],
})
export class FactorsModule {}
