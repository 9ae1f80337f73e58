import { Module } from '@nestjs/common';
import { LoginLockoutService } from './login-lockout.service';
import { PasswordHasher } from './password-hasher';
import { TokenSecrets } from './token-secrets';

/** Password hashing, login lockout and derived keys, shared by the account features. */
@Module({
  providers: [PasswordHasher, LoginLockoutService, TokenSecrets],
  exports: [PasswordHasher, LoginLockoutService, TokenSecrets],
})
export class SecurityModule {}
