import { ApiProperty } from '@nestjs/swagger';

/**
 * What register answers: the new member, and no tokens. The website sends the member to the login
 * page after registering and reads nothing from this answer, so no session is opened here (one that
 * nobody uses would stay live for REFRESH_TOKEN_TTL). Log in with `login` next.
 */
export class RegisterResponse {
  @ApiProperty({ example: '1024' })
  memberId: string;

  @ApiProperty({ example: 'alice_01' })
  username: string;

  @ApiProperty({ example: 'Alice', nullable: true, type: String })
  nickname: string | null;

  @ApiProperty({ example: null, nullable: true, type: String })
  avatarUrl: string | null;

  @ApiProperty({
    example: false,
    description: 'The email was proven with `emailCode` (false: an unproven claim, or no email)',
  })
  emailVerified: boolean;

  @ApiProperty({
    example: false,
    description: 'The phone was proven with `phoneCode` (false: an unproven claim, or no phone)',
  })
  phoneVerified: boolean;
}
