import { Module } from '@nestjs/common';
import { SessionsModule } from '../sessions/sessions.module';
import { ClientSessionsController } from './client-sessions.controller';
import { LoginLockoutRepository } from './login-lockout.repository';
import { LoginLockoutService } from './login-lockout.service';
import { PasswordHasher } from './password-hasher';
import { PasswordPolicy } from './password-policy';
import { TokenSecrets } from './token-secrets';

/**
 * Password hashing, login lockout and derived keys, shared by the account features, and the member's
 * signed-in clients at /api/v1/app/security/client-sessions.
 */
@Module({
  imports: [SessionsModule],
  controllers: [ClientSessionsController],
  providers: [PasswordHasher, PasswordPolicy, LoginLockoutService, LoginLockoutRepository, TokenSecrets],
  exports: [PasswordHasher, PasswordPolicy, LoginLockoutService, TokenSecrets],
})
export class SecurityModule {}
