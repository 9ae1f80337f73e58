import { Injectable } from '@nestjs/common';
import { fieldError } from '@app/envelope';
import { MembershipConfig } from '../config/membership.config';

/** Longest accepted password (argon2 input stays small); the DTOs enforce it too. */
export const PASSWORD_MAX_LENGTH = 128;

/**
 * The shortest accepted new password, PASSWORD_MIN_LENGTH (default 8), checked per app instance
 * rather than in a DTO decorator so two apps in one process can differ.
 */
@Injectable()
export class PasswordPolicy {
  constructor(private readonly config: MembershipConfig) {}

  get minLength(): number {
    return this.config.PASSWORD_MIN_LENGTH;
  }

  /** Throws 10000 naming `field` (same shape as a DTO validation failure) when the password is too short. */
  assertAcceptable(field: string, password: string): void {
    if (password.length >= this.minLength) return;
    throw fieldError(
      field,
      'passwordTooShort',
      `${field} must be ${this.minLength} to ${PASSWORD_MAX_LENGTH} characters`,
      { min: this.minLength },
    );
  }
}
