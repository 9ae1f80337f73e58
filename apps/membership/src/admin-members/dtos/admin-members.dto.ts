import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsIn, IsInt, IsOptional, IsString, Max, MaxLength, Min, MinLength } from 'class-validator';

export class ListMembersQuery {
  @ApiPropertyOptional({
    example: 'ali',
    description: 'Start of a username, email, phone or nickname (case-insensitive), or a member id',
  })
  @IsOptional()
  @IsString()
  @MinLength(1)
  @MaxLength(64)
  q?: string;

  @ApiPropertyOptional({ example: 0, default: 0 })
  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(0)
  @Max(100_000)
  offset?: number;

  @ApiPropertyOptional({ example: 20, default: 20, maximum: 100 })
  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(100)
  limit?: number;
}

export class AdminMemberView {
  @ApiProperty({ example: '42' }) id: string;
  @ApiProperty({ example: 'alice' }) username: string;
  @ApiProperty({ example: 'Alice', nullable: true, type: String }) nickname: string | null;
  @ApiProperty({ example: 'alice@example.com', nullable: true, type: String }) email: string | null;
  @ApiProperty({ example: '13800138000', nullable: true, type: String }) phone: string | null;
  @ApiProperty({ example: true }) emailVerified: boolean;
  @ApiProperty({ example: false }) phoneVerified: boolean;
  @ApiProperty({ example: null, nullable: true, type: String }) avatarUrl: string | null;
  @ApiProperty({ example: 'active', enum: ['active', 'disabled'] }) status: string;
  @ApiProperty({ example: ['viewer'], type: [String] }) roles: string[];
  @ApiProperty({ example: 0 }) memberLevel: number;
  @ApiProperty({ example: 0 }) points: number;
  @ApiProperty({ example: '2026-11-01T08:00:00.000Z' }) createdTime: Date;
  @ApiProperty({ example: '2026-11-20T08:00:00.000Z', nullable: true, type: Date }) lastLoginTime: Date | null;
}

export class AdminMemberListView {
  @ApiProperty({ type: [AdminMemberView] }) items: AdminMemberView[];
  @ApiProperty({
    example: 1,
    description:
      'Matching members, counted up to 1000 past the end of this page (offset + limit + 1000): with `totalCapped` there are at least this many',
  })
  total: number;
  @ApiProperty({ example: false, description: 'true: the count stopped at `total`; there may be more members' })
  totalCapped: boolean;
  @ApiProperty({ example: 0 }) offset: number;
  @ApiProperty({ example: 20 }) limit: number;
}

export class AdminSessionView {
  @ApiProperty({ example: '0b6f7c9e-7d0a-4a4e-9a51-5c3f1c2d9e10' }) id: string;
  @ApiProperty({ example: 'password' }) loginType: string;
  @ApiProperty({ example: 'Chrome on macOS', nullable: true, type: String }) deviceName: string | null;
  @ApiProperty({ example: '203.0.113.7', nullable: true, type: String }) ip: string | null;
  @ApiProperty({ example: ['pwd', 'otp', 'mfa'], type: [String] }) amr: string[];
  @ApiProperty({ example: '2026-11-20T08:00:00.000Z' }) createdTime: Date;
  @ApiProperty({ example: '2026-11-20T08:30:00.000Z' }) lastActiveTime: Date;
  @ApiProperty({ example: '2026-12-20T08:00:00.000Z' }) expiresTime: Date;
}

export class AdminIdentityView {
  @ApiProperty({ example: '5d1c2a8e-1f7b-4c1e-8a3e-0f6b7c8d9e0a' }) id: string;
  @ApiProperty({ example: 'github' }) provider: string;
  @ApiProperty({ example: 'github-app' }) registrationId: string;
  @ApiProperty({ example: 'alice-gh', nullable: true, type: String }) nickname: string | null;
  @ApiProperty({ example: null, nullable: true, type: String }) avatarUrl: string | null;
  @ApiProperty({ example: '2026-11-01T08:00:00.000Z' }) createdTime: Date;
  @ApiProperty({ example: null, nullable: true, type: Date }) lastLoginTime: Date | null;
}

export class AdminPasskeyView {
  @ApiProperty({ example: '7a1b2c3d-0000-4000-8000-000000000001' }) id: string;
  @ApiProperty({ example: 'MacBook Touch ID' }) name: string;
  @ApiProperty({ example: true }) backedUp: boolean;
  @ApiProperty({ example: '2026-11-01T08:00:00.000Z' }) createdTime: Date;
  @ApiProperty({ example: null, nullable: true, type: Date }) lastUsedTime: Date | null;
}

export class AdminFactorsView {
  @ApiProperty({ example: { enabled: true, createdTime: '2026-11-01T08:00:00.000Z' } }) totp: {
    enabled: boolean;
    createdTime: Date | null;
  };
  @ApiProperty({ type: [AdminPasskeyView] }) passkeys: AdminPasskeyView[];
  @ApiProperty({ example: { remaining: 9 } }) recoveryCodes: { remaining: number };
}

export class FactorsResetView {
  @ApiProperty({ example: true, description: 'An authenticator app was removed' }) totp: boolean;
  @ApiProperty({ example: 1, description: 'Passkeys removed' }) passkeys: number;
  @ApiProperty({ example: 9, description: 'Unused recovery codes removed' }) recoveryCodes: number;
}

export class SessionsEndedView {
  @ApiProperty({ example: 2 }) sessionsEnded: number;
}

export class SetRoleRequest {
  @ApiProperty({
    example: 'viewer',
    enum: ['admin', 'viewer', 'none'],
    description: 'The operator role; `none` removes it. Other roles are kept.',
  })
  @IsIn(['admin', 'viewer', 'none'])
  role: 'admin' | 'viewer' | 'none';
}
