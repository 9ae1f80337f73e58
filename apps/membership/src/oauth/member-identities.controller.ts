import { Controller, Delete, Get, HttpCode, Param, Post, Query, Res } from '@nestjs/common';
import { ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { CurrentPrincipal, Principal } from '@app/auth';
import { ApiEnvelope, BusinessException, ErrorCode } from '@app/envelope';
import { StepUpService } from '../factors/step-up.service';
import { MemberIdentitiesService } from '../identities/member-identities.service';
import { ClientFacts } from '../sessions/client-facts';
import { Client } from '../sessions/client.decorator';
import { sessionIdOf } from '../sessions/session-id';
import { OAuth2ClientRegistry } from './clients/oauth2-client.registry';
import { ApiError } from './oauth2-errors.doc';
import { RedirectQuery } from './dtos/oauth2-requests.dto';
import { MemberIdentityResponse, OAuth2AuthUrlResponse } from './dtos/oauth2-responses.dto';
import { OAuth2LoginService } from './oauth2-login.service';

/** The logged-in member's external identities: list, link another, unlink one. */
@ApiTags('OAuth 2.0 and WeChat login')
@ApiError(401, 401, 'token missing, malformed, expired or revoked')
@Controller('api/v1/app/oauth2/identities')
export class MemberIdentitiesController {
  constructor(
    private readonly identities: MemberIdentitiesService,
    private readonly registry: OAuth2ClientRegistry,
    private readonly logins: OAuth2LoginService,
    private readonly stepUp: StepUpService,
  ) {}

  @Get()
  @ApiOperation({ summary: 'List my linked external identities' })
  @ApiEnvelope(MemberIdentityResponse, { isArray: true })
  async list(@CurrentPrincipal() me: Principal): Promise<MemberIdentityResponse[]> {
    return (await this.identities.list(memberId(me))).map((i) => ({
      id: i.id,
      provider: i.provider,
      registrationId: i.registrationId,
      openId: i.subject,
      unionId: i.unionId,
      nickname: i.nickname,
      avatarUrl: i.avatarUrl,
      createdTime: i.createdTime,
      lastLoginTime: i.lastLoginTime,
    }));
  }

  @Post('link/:registrationId')
  @HttpCode(200)
  @ApiOperation({
    summary: 'Start linking an external identity to me',
    description:
      'Returns an authorization URL like /auth-url (WeChat website clients: the qrconnect URL, pollable at /qrcode/state/{state}). ' +
      'After the provider, the browser lands on the frontend page with `?linked={registrationId}`, or `?error=already_linked` when another member owns that identity.',
  })
  @ApiParam({ name: 'registrationId', example: 'github-app' })
  @ApiEnvelope(OAuth2AuthUrlResponse)
  @ApiError(404, 404, 'unknown registrationId')
  async link(
    @CurrentPrincipal() me: Principal,
    @Param('registrationId') registrationId: string,
    @Query() q: RedirectQuery,
    @Client() client: ClientFacts,
    @Res({ passthrough: true }) res: Response,
  ): Promise<OAuth2AuthUrlResponse> {
    const reg = this.registry.get(registrationId);
    const kind =
      reg.provider === 'wechat-open' ? 'wechat-qrconnect' : reg.provider === 'wechat-mp' ? 'wechat-mobile' : 'standard';
    const started = await this.logins.start(reg, client, {
      kind,
      redirectUri: q.redirectUri,
      linkMemberId: memberId(me),
      linkSessionId: sessionIdOf(me),
    });
    res.append('Set-Cookie', started.setCookie);
    return started.authorization;
  }

  @Delete(':id')
  @ApiOperation({
    summary: 'Unlink one of my identities',
    description: 'Refused (409) when it is my last way to log in (no password, no phone, no other identity).',
  })
  @ApiParam({ name: 'id', example: '5b0f3c1e-8a53-4f57-9d0c-3c7d2b1a9e44' })
  @ApiEnvelope(null)
  @ApiError(404, 404, 'no such identity of mine')
  @ApiError(409, 409, 'last way to log in')
  @ApiError(403, 10010, 'step-up needed (a member with a second factor): POST /api/v1/app/auth/step-up, then retry')
  async unlink(@CurrentPrincipal() me: Principal, @Param('id') id: string): Promise<null> {
    await this.stepUp.assert(memberId(me), sessionIdOf(me));
    await this.identities.unlink(memberId(me), id);
    return null;
  }
}

function memberId(p: Principal | undefined): string {
  if (!p || p.kind !== 'member') throw new BusinessException(ErrorCode.UNAUTHORIZED);
  return p.id;
}
