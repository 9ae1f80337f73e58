import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import {
  IsIn,
  IsString,
  Length,
  Matches,
  MaxLength,
  Validate,
  ValidateIf,
  ValidatorConstraint,
  ValidatorConstraintInterface,
} from 'class-validator';

export class LinkedIdentityView {
  @ApiProperty({ example: 'github-app' })
  provider: string;
  @ApiPropertyOptional({ example: '583231', nullable: true, type: String })
  openId?: string | null;
  @ApiPropertyOptional({ example: 'octocat', nullable: true, type: String })
  nickname?: string | null;
  @ApiPropertyOptional({ nullable: true, type: String })
  avatarUrl?: string | null;
}

export class ProfileResponse {
  @ApiProperty({ example: '1024' })
  id: string;
  @ApiProperty({ example: 'alice_01' })
  username: string;
  @ApiProperty({ example: 'alice@example.com', nullable: true, type: String })
  email: string | null;
  @ApiProperty({ example: '13800138000', nullable: true, type: String })
  phone: string | null;
  @ApiProperty({ example: 'Alice', nullable: true, type: String })
  nickname: string | null;
  @ApiProperty({ example: '/files/2026/11/3f9c0d1e5b2a4c7d8e9f0a1b2c3d4e5f.png', nullable: true, type: String })
  avatarUrl: string | null;
  @ApiProperty({ enum: ['male', 'female', 'other'], nullable: true })
  gender: string | null;
  @ApiProperty({ example: '1990-05-17', nullable: true, type: String })
  birthDate: string | null;
  @ApiProperty({ enum: ['active', 'disabled'], example: 'active' })
  status: string;
  @ApiProperty({ example: 0 })
  memberLevel: number;
  @ApiProperty({ example: 0 })
  points: number;
  @ApiProperty({ example: ['member'], type: [String] })
  roles: string[];
  @ApiProperty({ example: '2026-11-22T03:00:00.000Z' })
  createdTime: Date;
  @ApiProperty({ example: '2026-11-22T03:00:00.000Z', nullable: true, type: Date })
  lastLoginTime: Date | null;
  @ApiProperty({ type: [LinkedIdentityView] })
  identities: LinkedIdentityView[];
}

@ValidatorConstraint({ name: 'calendarDate' })
class CalendarDate implements ValidatorConstraintInterface {
  validate(value: unknown): boolean {
    if (typeof value !== 'string' || !/^\d{4}-\d{2}-\d{2}$/.test(value)) return false;
    const d = new Date(`${value}T00:00:00Z`);
    return (
      !Number.isNaN(d.getTime()) &&
      d.toISOString().slice(0, 10) === value &&
      value >= '1900-01-01' &&
      d.getTime() <= Date.now()
    );
  }
  defaultMessage(): string {
    return 'birthDate must be a past calendar date in yyyy-MM-dd';
  }
}

/**
 * Skips validation for "leave unchanged" (`null` or absent) and for "clear" (`""`), as the website sends them:
 * its profile form sends `avatarUrl: null` (and `gender`/`birthDate: null`) when the member did not touch them.
 */
const KeepOrClear = () =>
  ValidateIf((_: object, value: unknown) => value !== undefined && value !== null && value !== '');

const PATCH_RULE = '`null` or absent: unchanged; `""`: cleared.';

/**
 * Only these fields may change; any other field is refused with 10000. A field that is `null` or absent is
 * left unchanged (the website sends `avatarUrl: null` to keep the avatar); an empty string `""` clears it.
 */
export class UpdateProfileRequest {
  @ApiPropertyOptional({ example: 'Alice', nullable: true, description: `1-64 characters (trimmed). ${PATCH_RULE}` })
  @Transform(({ value }: { value: unknown }) => (typeof value === 'string' ? value.trim() : value))
  @KeepOrClear()
  @IsString()
  @Length(1, 64)
  nickname?: string | null;

  @ApiPropertyOptional({
    example: '/files/2026/11/3f9c0d1e5b2a4c7d8e9f0a1b2c3d4e5f.png',
    description: `A media path from the upload, or an https URL. ${PATCH_RULE}`,
    nullable: true,
  })
  @KeepOrClear()
  @IsString()
  @MaxLength(1024)
  @Matches(/^(?!.*\.\.)(\/files\/[A-Za-z0-9][A-Za-z0-9/_.-]*|https:\/\/[^\s"'<>]+)$/, {
    message: 'avatarUrl must be a /files/ path or an https URL',
  })
  avatarUrl?: string | null;

  @ApiPropertyOptional({ enum: ['male', 'female', 'other', ''], nullable: true, description: PATCH_RULE })
  @KeepOrClear()
  @IsIn(['male', 'female', 'other'])
  gender?: 'male' | 'female' | 'other' | '' | null;

  @ApiPropertyOptional({ example: '1990-05-17', nullable: true, description: `yyyy-MM-dd, in the past. ${PATCH_RULE}` })
  @KeepOrClear()
  @Validate(CalendarDate)
  birthDate?: string | null;
}

export class ChangePasswordResponse {
  @ApiProperty({ example: 1, description: 'Other sessions that were ended' })
  revokedSessions: number;
}

export class SendCodeResponse {
  @ApiProperty({ example: 300000, description: 'Code lifetime in ms' })
  expiresIn: number;
  @ApiProperty({ example: 60000, description: 'Earliest resend in ms' })
  resendIn: number;
}
