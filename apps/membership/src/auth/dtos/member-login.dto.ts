import { ApiProperty } from '@nestjs/swagger';

/** Result of login, login-by-phone, register and refresh-token. */
export class MemberLoginResponse {
  @ApiProperty({ example: '1024', description: 'Member id (string)' })
  memberId: string;
  @ApiProperty({ example: 'alice_01' })
  username: string;
  @ApiProperty({ example: 'Alice', nullable: true, type: String })
  nickname: string | null;
  @ApiProperty({ example: '/files/2026/11/3f9c0d1e5b2a4c7d8e9f0a1b2c3d4e5f.png', nullable: true, type: String })
  avatarUrl: string | null;
  @ApiProperty({
    description: 'Access JWT; send as `Authorization: Bearer <token>`',
    example: 'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9...',
  })
  token: string;
  @ApiProperty({
    description: 'Opaque, single-use refresh token',
    example: 'q0vN3m2kqT6l1mYv3h8y1xk3YlH4rKcVJx2pX0wq9aE',
  })
  refreshToken: string;
  @ApiProperty({ example: 'Bearer' })
  tokenType: 'Bearer';
  @ApiProperty({ example: 1800000, description: 'Access token lifetime in ms (ACCESS_TOKEN_TTL)' })
  expiresIn: number;
  @ApiProperty({ example: 2592000000, description: 'Refresh token lifetime in ms (REFRESH_TOKEN_TTL)' })
  refreshExpiresIn: number;
}

/** Result of refresh-token-by-jwt. */
export class TokenRefreshResponse {
  @ApiProperty({ example: 'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9...' })
  token: string;
  @ApiProperty({ example: 'Bearer' })
  tokenType: 'Bearer';
  @ApiProperty({ example: 1800000 })
  expiresIn: number;
}
