import { Controller, Delete, Get, Param } from '@nestjs/common';
import { ApiOperation, ApiProperty, ApiResponse, ApiTags } from '@nestjs/swagger';
import { CurrentPrincipal, Principal } from '@app/auth';
import { ApiEnvelope, BusinessException, ErrorCode, ErrorEnvelope, msg } from '@app/envelope';
import { sessionIdOf } from '../sessions/session-id';
import { SessionsService } from '../sessions/sessions.service';

export class ClientSessionView {
  @ApiProperty({ example: '6f1c2d4e-8a9b-4c3d-9e1f-2a3b4c5d6e7f' })
  id: string;
  @ApiProperty({ example: 'Chrome on Windows' })
  deviceName: string;
  @ApiProperty({ example: 'password' })
  loginType: string;
  @ApiProperty({
    example: ['pwd', 'otp', 'mfa'],
    type: [String],
    description: 'How the session was authenticated (RFC 8176 values)',
  })
  amr: string[];
  @ApiProperty({ example: '203.0.113.7', nullable: true, type: String })
  ip: string | null;
  @ApiProperty({ example: '2026-11-22T03:00:00.000Z' })
  createdTime: Date;
  @ApiProperty({ example: '2026-11-22T03:20:00.000Z' })
  lastActiveTime: Date;
  @ApiProperty({ example: true, description: 'The session of the token making this request' })
  current: boolean;
}

/** The member's signed-in clients: /api/v1/app/security/client-sessions. */
@ApiTags('Member sessions')
@Controller('api/v1/app/security/client-sessions')
export class ClientSessionsController {
  constructor(private readonly sessions: SessionsService) {}

  @Get()
  @ApiOperation({ summary: 'List the live sessions of the current member' })
  @ApiEnvelope(ClientSessionView, { isArray: true })
  async list(@CurrentPrincipal() principal: Principal): Promise<ClientSessionView[]> {
    const sid = sessionIdOf(principal);
    return (await this.sessions.list(principal.id)).map((s) => ({
      id: s.id,
      deviceName: s.deviceName,
      loginType: s.loginType,
      amr: s.amr,
      ip: s.ip,
      createdTime: s.createdTime,
      lastActiveTime: s.lastActiveTime,
      current: s.id === sid,
    }));
  }

  @Delete(':id')
  @ApiOperation({ summary: 'End one session (its tokens stop working at once)' })
  @ApiEnvelope(null)
  @ApiResponse({ status: 404, description: 'code 404: no such live session of this member', type: ErrorEnvelope })
  async revoke(@CurrentPrincipal() principal: Principal, @Param('id') id: string): Promise<null> {
    if (!(await this.sessions.revoke(principal.id, id, 'revoked_by_member'))) {
      throw new BusinessException(ErrorCode.NOT_FOUND, msg('sessions.notFound'));
    }
    return null;
  }
}
