import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Expose, Transform } from 'class-transformer';
import {
  IsEmail,
  IsIn,
  IsString,
  Matches,
  MaxLength,
  ValidateIf,
  ValidationArguments,
  ValidatorConstraint,
  ValidatorConstraintInterface,
  Validate,
  isEmail,
} from 'class-validator';
import { IsPhone, isPhone } from '../../verification/phone-format';

type Raw = { type?: unknown; account?: unknown; phone?: unknown; email?: unknown };
const lower = (v: unknown) => (typeof v === 'string' ? v.trim().toLowerCase() : v);

/**
 * The account named by `account` must match `type` (a phone for sms, an email for email) and, when `phone`
 * or `email` is sent as well, be the same one: two different targets in one request are refused, never guessed.
 */
@ValidatorConstraint({ name: 'accountOfType' })
class AccountOfType implements ValidatorConstraintInterface {
  validate(value: unknown, args: ValidationArguments): boolean {
    const o = args.object as ResetCodeRequest;
    if (o.type === 'sms') return isPhone(value) && o.phone === value;
    if (o.type === 'email')
      return typeof value === 'string' && value.length <= 254 && isEmail(value) && o.email === value;
    return true; // `type` itself is reported
  }
  defaultMessage(args: ValidationArguments): string {
    const o = args.object as ResetCodeRequest;
    const field = o.type === 'sms' ? 'phone' : 'email';
    const wanted = o.type === 'sms' ? 'a mobile number' : 'an email address';
    const matchesType = o.type === 'sms' ? isPhone(args.value) : typeof args.value === 'string' && isEmail(args.value);
    return matchesType
      ? `account and ${field} name different targets; send one of them`
      : `account must be ${wanted} when type is ${o.type}`;
  }
}

/**
 * Where the reset code went: mortise's `ResetPasswordRequest(type, account, code, newPassword)` (the
 * website's forgot-password page sends `account`), or this API's `phone` / `email`. `account` is copied
 * into `phone` (type sms) or `email` (type email) before validation, so the handler reads one field.
 */
export class ResetCodeRequest {
  @ApiProperty({ enum: ['sms', 'email'], example: 'email' })
  @IsIn(['sms', 'email'])
  type: 'sms' | 'email';

  @ApiPropertyOptional({
    example: 'alice@example.com',
    description:
      'The phone (type sms) or email (type email) the code was sent to, as mortise sends it. Alternative to `phone` / `email`; when both are sent they must be the same.',
  })
  @Transform(({ obj }: { obj: Raw }) => (obj.type === 'email' ? lower(obj.account) : obj.account), {
    toClassOnly: true,
  })
  @ValidateIf((o: ResetCodeRequest) => o.account !== undefined)
  @IsString()
  @Validate(AccountOfType)
  account?: string;

  @ApiPropertyOptional({ example: '13800138000', description: 'Required when type is sms (or give `account`)' })
  // Exposed so the transform runs when only `account` was sent.
  @Expose()
  @Transform(({ obj }: { obj: Raw }) => obj.phone ?? (obj.type === 'sms' ? obj.account : undefined), {
    toClassOnly: true,
  })
  @ValidateIf((o: ResetCodeRequest) => o.type === 'sms' || o.phone !== undefined)
  @IsPhone()
  phone?: string;

  @ApiPropertyOptional({ example: 'alice@example.com', description: 'Required when type is email (or give `account`)' })
  @Expose()
  @Transform(({ obj }: { obj: Raw }) => lower(obj.email ?? (obj.type === 'email' ? obj.account : undefined)), {
    toClassOnly: true,
  })
  @ValidateIf((o: ResetCodeRequest) => o.type === 'email' || o.email !== undefined)
  @IsEmail({}, { message: 'email must be an email address' })
  @MaxLength(254)
  email?: string;

  @ApiProperty({ example: '123456' })
  @IsString()
  @Matches(/^\d{6}$/, { message: 'code must be 6 digits' })
  code: string;
}
