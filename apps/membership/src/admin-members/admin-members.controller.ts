import { Body, Controller, Delete, Get, HttpCode, Param, Post, Put, Query } from '@nestjs/common';
import { ApiBody, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import { AuditContext, AuditRequest } from '@app/audit';
import { Roles } from '@app/auth';
import { ApiEnvelope } from '@app/envelope';
import { ApiError } from '../oauth/oauth2-errors.doc';
import { AdminMembersService } from './admin-members.service';
import {
  AdminFactorsView,
  AdminIdentityView,
  AdminMemberListView,
  AdminMemberView,
  AdminSessionView,
  FactorsResetView,
  ListMembersQuery,
  SessionsEndedView,
  SetRoleRequest,
} from './dtos/admin-members.dto';

const ID = { name: 'id', example: '42', description: 'Member id' };

/** The console's Members page: `viewer` reads, `admin` changes; every change is in the audit log. */
@ApiTags('Members (admin)')
@ApiError(401, 401, 'no or bad token')
@ApiError(403, 403, 'not an admin (writes) or viewer (reads)')
@Controller('api/v1/admin/members')
export class AdminMembersController {
  constructor(private readonly members: AdminMembersService) {}

  @Get()
  @Roles('viewer')
  @ApiOperation({
    summary: 'Search members (newest first, paginated)',
    description: '`q` matches the start of a username, email, phone or nickname, or an exact member id.',
  })
  @ApiEnvelope(AdminMemberListView)
  @ApiError(400, 10000, 'bad q, offset or limit')
  list(@Query() q: ListMembersQuery): Promise<AdminMemberListView> {
    return this.members.list(q.q, q.offset, q.limit);
  }

  @Get(':id')
  @Roles('viewer')
  @ApiParam(ID)
  @ApiOperation({ summary: "A member's profile" })
  @ApiEnvelope(AdminMemberView)
  @ApiError(404, 404, 'no such member')
  member(@Param('id') id: string): Promise<AdminMemberView> {
    return this.members.member(id);
  }

  @Get(':id/sessions')
  @Roles('viewer')
  @ApiParam(ID)
  @ApiOperation({ summary: "A member's live sessions (most recently active first)" })
  @ApiEnvelope(AdminSessionView, { isArray: true })
  @ApiError(404, 404, 'no such member')
  sessions(@Param('id') id: string): Promise<AdminSessionView[]> {
    return this.members.sessionsOf(id);
  }

  @Delete(':id/sessions')
  @Roles('admin')
  @ApiParam(ID)
  @ApiOperation({
    summary: 'Sign the member out everywhere',
    description:
      'Ends every session; their refresh tokens stop working and their access tokens are refused. Audit: member.sessions_revoked.',
  })
  @ApiEnvelope(SessionsEndedView)
  @ApiError(404, 404, 'no such member')
  revokeAll(@Param('id') id: string, @AuditRequest() ctx: AuditContext): Promise<SessionsEndedView> {
    return this.members.revokeAllSessions(id, ctx);
  }

  @Delete(':id/sessions/:sessionId')
  @Roles('admin')
  @ApiParam(ID)
  @ApiParam({ name: 'sessionId', example: '0b6f7c9e-7d0a-4a4e-9a51-5c3f1c2d9e10' })
  @ApiOperation({ summary: 'Sign one session out', description: 'Audit: session.revoked.' })
  @ApiEnvelope(null)
  @ApiError(404, 404, 'no such member or live session')
  async revokeOne(
    @Param('id') id: string,
    @Param('sessionId') sessionId: string,
    @AuditRequest() ctx: AuditContext,
  ): Promise<null> {
    await this.members.revokeSession(id, sessionId, ctx);
    return null;
  }

  @Get(':id/identities')
  @Roles('viewer')
  @ApiParam(ID)
  @ApiOperation({ summary: "A member's linked third-party identities" })
  @ApiEnvelope(AdminIdentityView, { isArray: true })
  @ApiError(404, 404, 'no such member')
  identities(@Param('id') id: string): Promise<AdminIdentityView[]> {
    return this.members.identitiesOf(id);
  }

  @Get(':id/factors')
  @Roles('viewer')
  @ApiParam(ID)
  @ApiOperation({ summary: "A member's second factors (no secrets)" })
  @ApiEnvelope(AdminFactorsView)
  @ApiError(404, 404, 'no such member')
  factors(@Param('id') id: string): Promise<AdminFactorsView> {
    return this.members.factorsOf(id);
  }

  @Delete(':id/factors')
  @Roles('admin')
  @ApiParam(ID)
  @ApiOperation({
    summary: 'Reset second factors',
    description:
      'Removes the authenticator app, passkeys and recovery codes so the member can enrol again, and ends their sessions. Audit: member.factors_reset; webhook member.factor_changed.',
  })
  @ApiEnvelope(FactorsResetView)
  @ApiError(404, 404, 'no such member')
  resetFactors(@Param('id') id: string, @AuditRequest() ctx: AuditContext): Promise<FactorsResetView> {
    return this.members.resetFactors(id, ctx);
  }

  @Post(':id/disable')
  @HttpCode(200)
  @Roles('admin')
  @ApiParam(ID)
  @ApiOperation({
    summary: 'Disable the account',
    description:
      'Ends every session; sign-in, refresh and existing access tokens are refused. Audit: member.disabled; webhook member.disabled. Not on your own account.',
  })
  @ApiEnvelope(AdminMemberView)
  @ApiError(404, 404, 'no such member')
  @ApiError(409, 409, 'your own account')
  disable(@Param('id') id: string, @AuditRequest() ctx: AuditContext): Promise<AdminMemberView> {
    return this.members.setStatus(id, 'disabled', ctx);
  }

  @Post(':id/enable')
  @HttpCode(200)
  @Roles('admin')
  @ApiParam(ID)
  @ApiOperation({
    summary: 'Enable a disabled account',
    description: 'The member signs in again. Audit: member.enabled.',
  })
  @ApiEnvelope(AdminMemberView)
  @ApiError(404, 404, 'no such member')
  enable(@Param('id') id: string, @AuditRequest() ctx: AuditContext): Promise<AdminMemberView> {
    return this.members.setStatus(id, 'active', ctx);
  }

  @Put(':id/role')
  @Roles('admin')
  @ApiParam(ID)
  @ApiOperation({
    summary: 'Set the operator role: admin, viewer or none',
    description:
      'Takes effect here at once; gateway tokens carry the roles they were signed with until they expire (ACCESS_TOKEN_TTL). Audit: member.role_changed. Not on your own account.',
  })
  @ApiBody({
    type: SetRoleRequest,
    examples: { viewer: { value: { role: 'viewer' } }, none: { value: { role: 'none' } } },
  })
  @ApiEnvelope(AdminMemberView)
  @ApiError(400, 10000, 'role is not admin, viewer or none')
  @ApiError(404, 404, 'no such member')
  @ApiError(409, 409, 'your own account')
  setRole(
    @Param('id') id: string,
    @Body() body: SetRoleRequest,
    @AuditRequest() ctx: AuditContext,
  ): Promise<AdminMemberView> {
    return this.members.setRole(id, body, ctx);
  }
}
