import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsObject, IsOptional, IsString, Length, Matches } from 'class-validator';
import { Transform } from 'class-transformer';
import type { AuthenticationResponseJSON, RegistrationResponseJSON } from '@simplewebauthn/server';
import { FactorAnswerRequest } from '../../factors/dtos/factor.dto';
import { FACTOR_METHODS, FactorMethod } from '../../factors/factor-strength';
import { MemberLoginResponse } from './member-login.dto';

const MFA_TOKEN = /^mfa_[A-Za-z0-9_-]{43}$/;
const trim = ({ value }: { value: unknown }) => (typeof value === 'string' ? value.trim() : value);

/**
 * What a sign-in answers instead of tokens when the member has a second factor (or must enrol one):
 * in the same envelope as MemberLoginResponse, told apart by `mfaRequired`.
 */
export class MfaChallengeResponse {
  @ApiProperty({ example: true })
  mfaRequired: true;
  @ApiProperty({
    example: 'mfa_5mXcQ0c2d4b3VJd0p8lZxq1m7cQ0c2d4b3VJd0p8lZx',
    description: 'Single use; for POST mfa/verify (or the mfa/enrol/* steps)',
  })
  mfaToken: string;
  @ApiProperty({
    enum: [...FACTOR_METHODS],
    isArray: true,
    example: ['totp', 'passkey', 'recovery_code'],
    description: 'What this member can answer with (to enrol: totp, passkey)',
  })
  methods: FactorMethod[];
  @ApiProperty({
    example: false,
    description: 'true: the member must enrol a factor (MFA_REQUIRED_ROLES) before getting tokens',
  })
  enrolmentRequired: boolean;
  @ApiProperty({ example: 300000, description: 'Lifetime of mfaToken in ms (MFA_CHALLENGE_TTL_MS)' })
  expiresIn: number;
}

export class MfaTokenRequest {
  @ApiProperty({ example: 'mfa_5mXcQ0c2d4b3VJd0p8lZxq1m7cQ0c2d4b3VJd0p8lZx' })
  @IsString()
  @Matches(MFA_TOKEN, { message: 'mfaToken is malformed' })
  mfaToken: string;
}

export class MfaVerifyRequest extends FactorAnswerRequest {
  @ApiProperty({ example: 'mfa_5mXcQ0c2d4b3VJd0p8lZxq1m7cQ0c2d4b3VJd0p8lZx' })
  @IsString()
  @Matches(MFA_TOKEN, { message: 'mfaToken is malformed' })
  mfaToken: string;
}

export class MfaEnrolTotpConfirmRequest extends MfaTokenRequest {
  @ApiProperty({ example: '123456' })
  @IsString()
  @Matches(/^\d{6}$/, { message: 'code must be 6 digits' })
  code: string;
}

export class MfaEnrolPasskeyRequest extends MfaTokenRequest {
  @ApiProperty({ type: Object, description: 'RegistrationResponseJSON from navigator.credentials.create' })
  @IsObject()
  credential: RegistrationResponseJSON;

  @ApiPropertyOptional({ example: 'Laptop', maxLength: 64 })
  @IsOptional()
  @Transform(trim)
  @IsString()
  @Length(1, 64)
  name?: string;
}

export class PasskeyLoginRequest {
  @ApiProperty({ type: Object, description: 'AuthenticationResponseJSON from navigator.credentials.get' })
  @IsObject()
  credential: AuthenticationResponseJSON;
}

export class StepUpRequest extends FactorAnswerRequest {}

export class MfaEnrolmentLoginResponse extends MemberLoginResponse {
  @ApiProperty({
    type: [String],
    example: ['k7m2-x9qa-4f', 'p3rt-8vbn-2c'],
    description: '10 single-use recovery codes, shown only now',
  })
  recoveryCodes: string[];
}

export class StepUpResponse {
  @ApiProperty({
    example: 'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9...',
    description: 'A new access token of the same session carrying the new amr',
  })
  token: string;
  @ApiProperty({ example: 'Bearer' })
  tokenType: 'Bearer';
  @ApiProperty({ example: 1800000 })
  expiresIn: number;
  @ApiProperty({ example: ['pwd', 'otp', 'mfa'], type: [String] })
  amr: string[];
  @ApiProperty({
    example: 600000,
    description: 'How long (ms) the session now counts as stepped up (STEP_UP_MAX_AGE_MS)',
  })
  stepUpExpiresIn: number;
}

/** Any sign-in answer: tokens, or a second-factor challenge. */
export type LoginResult = MemberLoginResponse | MfaChallengeResponse;

/** The login endpoints answer a member with a second factor with a challenge instead of tokens. */
export const MFA_NOTE =
  'The login result; for a member with a second factor (or whose role requires one) instead MfaChallengeResponse ' +
  '{mfaRequired: true, mfaToken, methods, enrolmentRequired, expiresIn}: complete it at POST /api/v1/app/auth/mfa/verify (or mfa/enrol/*).';
