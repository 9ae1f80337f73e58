import { Module } from '@nestjs/common';
import { LoginLockoutService } from './login-lockout.service';
import { PasswordHasher } from './password-hasher';
import { PasswordPolicy } from './password-policy';
import { TokenSecrets } from './token-secrets';

/** Password hashing, login lockout and derived keys, shared by the account features. */
@Module({
  providers: [PasswordHasher, PasswordPolicy, LoginLockoutService, TokenSecrets],
  exports: [PasswordHasher, PasswordPolicy, LoginLockoutService, TokenSecrets],
})
export class SecurityModule {}
