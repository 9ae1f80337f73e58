import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import {
  IsEmail,
  IsIn,
  IsNotEmpty,
  IsOptional,
  IsString,
  Length,
  Matches,
  MaxLength,
  ValidateIf,
} from 'class-validator';
import { IsPhone } from '../../verification/phone-format';
import { ResetCodeRequest } from './reset-code.dto';

const trim = ({ value }: { value: unknown }) => (typeof value === 'string' ? value.trim() : value);
const lowerTrim = ({ value }: { value: unknown }) => (typeof value === 'string' ? value.trim().toLowerCase() : value);

export class RegisterRequest {
  @ApiPropertyOptional({ example: 'alice_01', pattern: '^[a-zA-Z0-9_]{4,20}$' })
  @ValidateIf((o: RegisterRequest) => o.username !== undefined || (!o.email && !o.phone))
  @IsString()
  @Matches(/^[a-zA-Z0-9_]{4,20}$/, {
    message: 'username must be 4-20 letters, digits or underscores (or give email or phone)',
  })
  // An all-digit username could shadow someone's phone number at login (accounts match usernames first).
  @Matches(/\D/, { message: 'username must not be only digits' })
  username?: string;

  @ApiPropertyOptional({ example: 'alice@example.com' })
  @IsOptional()
  @Transform(lowerTrim)
  @IsEmail({}, { message: 'email must be an email address' })
  @MaxLength(254)
  email?: string;

  @ApiPropertyOptional({ example: '13800138000' })
  @IsOptional()
  @IsPhone()
  phone?: string;

  @ApiPropertyOptional({ example: 'Alice' })
  @IsOptional()
  @Transform(trim)
  @IsString()
  @Length(1, 64)
  nickname?: string;

  @ApiProperty({
    example: 'correct horse battery',
    minLength: 8,
    maxLength: 128,
    description: 'PASSWORD_MIN_LENGTH (default 8) to 128 characters',
  })
  @IsString()
  @Length(1, 128, { message: 'password must be at most 128 characters' })
  password: string;

  @ApiPropertyOptional({
    example: '123456',
    description:
      'A code sent to `email` (send-code type email): the email is stored verified and taken back from an unproven claim. Without it the email is an unproven claim.',
  })
  @IsOptional()
  @Matches(/^\d{6}$/, { message: 'emailCode must be 6 digits' })
  emailCode?: string;

  @ApiPropertyOptional({
    example: '123456',
    description:
      'A code sent to `phone` (send-code type sms): the phone is stored verified and taken back from an unproven claim. Without it the phone is an unproven claim (no code login).',
  })
  @IsOptional()
  @Matches(/^\d{6}$/, { message: 'phoneCode must be 6 digits' })
  phoneCode?: string;
}

export class LoginRequest {
  @ApiProperty({ example: 'alice_01', description: 'Username, email or phone' })
  @Transform(trim)
  @IsString()
  @IsNotEmpty()
  @MaxLength(254)
  account: string;

  @ApiProperty({ example: 'correct horse battery' })
  @IsString()
  @IsNotEmpty()
  @MaxLength(128)
  password: string;
}

export class PhoneLoginRequest {
  @ApiProperty({ example: '13800138000' })
  @IsPhone()
  phone: string;

  @ApiProperty({ example: '123456' })
  @IsString()
  @Matches(/^\d{6}$/, { message: 'code must be 6 digits' })
  code: string;
}

export class SendCodeRequest {
  @ApiProperty({ enum: ['sms', 'email'], example: 'sms' })
  @IsIn(['sms', 'email'])
  type: 'sms' | 'email';

  @ApiPropertyOptional({ example: '13800138000', description: 'Required when type is sms' })
  @ValidateIf((o: SendCodeRequest) => o.type === 'sms' || o.phone !== undefined)
  @IsPhone()
  phone?: string;

  @ApiPropertyOptional({ example: 'alice@example.com', description: 'Required when type is email' })
  @ValidateIf((o: SendCodeRequest) => o.type === 'email' || o.email !== undefined)
  @Transform(lowerTrim)
  @IsEmail({}, { message: 'email must be an email address' })
  @MaxLength(254)
  email?: string;
}

export class VerifyCodeRequest extends SendCodeRequest {
  @ApiProperty({ example: '123456' })
  @IsString()
  @Matches(/^\d{6}$/, { message: 'code must be 6 digits' })
  code: string;
}

export class VerifyCodeResponse {
  @ApiProperty({ example: true })
  valid: boolean;
}

/** `type` + `account` (mortise, the website) or `type` + `phone` / `email`, the code and the new password. */
export class ResetPasswordRequest extends ResetCodeRequest {
  @ApiProperty({ example: 'a new long password', minLength: 8, maxLength: 128 })
  @IsString()
  @Length(1, 128, { message: 'newPassword must be at most 128 characters' }) // the minimum is PASSWORD_MIN_LENGTH (PasswordPolicy)
  newPassword: string;
}

export class RefreshTokenRequest {
  @ApiProperty({ example: 'q0vN3m2kqT6l1mYv3h8y1xk3YlH4rKcVJx2pX0wq9aE' })
  @IsString()
  @IsNotEmpty()
  @MaxLength(200)
  refreshToken: string;
}

export class ChangePasswordRequest {
  @ApiPropertyOptional({ example: 'correct horse battery', description: 'Required when the member has a password' })
  @IsOptional()
  @IsString()
  @MaxLength(128)
  oldPassword?: string;

  @ApiProperty({
    example: 'a new long password',
    minLength: 8,
    maxLength: 128,
    description: 'PASSWORD_MIN_LENGTH (default 8) to 128 characters',
  })
  @IsString()
  @Length(1, 128, { message: 'newPassword must be at most 128 characters' })
  newPassword: string;

  @ApiPropertyOptional({
    enum: ['sms', 'email'],
    example: 'sms',
    description:
      "Setting the first password (a member without one): where `code` was sent, the member's verified phone (sms) or email; default sms when the phone is verified",
  })
  @IsOptional()
  @IsIn(['sms', 'email'])
  type?: 'sms' | 'email';

  @ApiPropertyOptional({
    example: '123456',
    description:
      "Required to set the first password: a fresh code sent (send-code) to the member's verified phone or email",
  })
  @IsOptional()
  @Matches(/^\d{6}$/, { message: 'code must be 6 digits' })
  code?: string;
}
