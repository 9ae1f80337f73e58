import { IsInt, IsOptional, IsString, Matches, Max, Min, MinLength } from 'class-validator';
import { BaseConfig } from '@app/platform';

/** Every variable the membership app reads, validated at boot. */
export class MembershipConfig extends BaseConfig {
  /** HTTP port. */
  @IsInt()
  @Min(1)
  @Max(65535)
  MEMBERSHIP_PORT: number = 8080;

  /** Path prefix of every route, e.g. /member; empty for none. */
  @IsString()
  @Matches(/^(\/[A-Za-z0-9._~-]+)*\/?$/, { message: 'must be empty or a path like /member' })
  CONTEXT_PATH: string = '';

  /** HMAC secret of access tokens (>= 32 chars). Required in production; generated under DATA_DIR in development. */
  @IsOptional()
  @IsString()
  @MinLength(32, { message: 'must be at least 32 characters' })
  JWT_SECRET?: string;

  validateExtra(): string[] {
    const problems = super.validateExtra();
    if (this.isProduction && !this.JWT_SECRET) problems.push('JWT_SECRET: required when NODE_ENV=production');
    return problems;
  }
}
