import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import {
  IsIn,
  IsNotEmpty,
  IsObject,
  IsOptional,
  IsString,
  Length,
  Matches,
  MaxLength,
  ValidateIf,
} from 'class-validator';
import type { AuthenticationResponseJSON, RegistrationResponseJSON } from '@simplewebauthn/server';
import { FACTOR_METHODS, FactorMethod } from '../factor-strength';

const trim = ({ value }: { value: unknown }) => (typeof value === 'string' ? value.trim() : value);

export class TotpCodeRequest {
  @ApiProperty({ example: '123456', description: 'The 6-digit code the authenticator app shows now' })
  @IsString()
  @Matches(/^\d{6}$/, { message: 'code must be 6 digits' })
  code: string;
}

export class RegisterPasskeyRequest {
  @ApiProperty({
    type: Object,
    description:
      'RegistrationResponseJSON from navigator.credentials.create (@simplewebauthn/browser startRegistration)',
  })
  @IsObject()
  credential: RegistrationResponseJSON;

  @ApiPropertyOptional({ example: 'Laptop', maxLength: 64, description: 'Default: "Passkey"' })
  @IsOptional()
  @Transform(trim)
  @IsString()
  @Length(1, 64)
  name?: string;
}

export class RenamePasskeyRequest {
  @ApiProperty({ example: 'Phone', maxLength: 64 })
  @Transform(trim)
  @IsString()
  @Length(1, 64)
  name: string;
}

/** An answer to a second-factor question: a code (totp, recovery_code) or a passkey assertion. */
export class FactorAnswerRequest {
  @ApiProperty({ enum: FACTOR_METHODS, example: 'totp' })
  @IsIn(FACTOR_METHODS)
  method: FactorMethod;

  @ApiPropertyOptional({ example: '123456', description: 'totp: 6 digits; recovery_code: e.g. k7m2-x9qa-4f' })
  @ValidateIf((o: FactorAnswerRequest) => o.method !== 'passkey')
  @IsString()
  @IsNotEmpty()
  @MaxLength(32)
  code?: string;

  @ApiPropertyOptional({
    type: Object,
    description:
      'passkey: AuthenticationResponseJSON from navigator.credentials.get (@simplewebauthn/browser startAuthentication)',
  })
  @ValidateIf((o: FactorAnswerRequest) => o.method === 'passkey')
  @IsObject()
  credential?: AuthenticationResponseJSON;
}
