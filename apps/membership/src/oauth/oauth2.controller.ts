import { Controller, Get, Param, Query, Res } from '@nestjs/common';
import { ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import { Throttle } from '@nestjs/throttler';
import type { Response } from 'express';
import { Public } from '@app/auth';
import { ApiEnvelope } from '@app/envelope';
import { OAuth2ClientRegistry } from './clients/oauth2-client.registry';
import { ApiError } from './oauth2-errors.doc';
import { RedirectQuery, StateQuery } from './dtos/oauth2-requests.dto';
import { OAuth2AuthUrlResponse, OAuth2LoginResponse, OAuth2QRCodeStateResponse } from './dtos/oauth2-responses.dto';
import { OAuth2LoginService } from './oauth2-login.service';
import { OAuth2LoginResult } from './oauth2-login.service';
import { MFA_NOTE } from '../auth/dtos/mfa.dto';
import { ClientFacts } from '../sessions/client-facts';
import { Client } from '../sessions/client.decorator';

@ApiTags('OAuth 2.0 and WeChat login')
@Controller('api/v1/app/oauth2')
export class OAuth2Controller {
  constructor(
    private readonly registry: OAuth2ClientRegistry,
    private readonly logins: OAuth2LoginService,
  ) {}

  @Public()
  @Throttle({ default: { limit: 30, ttl: 60_000 } })
  @Get('auth-url/:registrationId')
  @ApiOperation({
    summary: 'Authorization URL of a configured OAuth 2.0 client',
    description:
      'Returns the authorization URL with a fresh state (single use, 10 minutes; PKCE S256 and OIDC nonce where supported). ' +
      'The URL is `{base_url}/login/oauth2/authorize/{registrationId}?state=`: opening it in the browser binds the state to that browser ' +
      '(HttpOnly `oauth2_binding` cookie, also set on this answer) and redirects to the provider. ' +
      'The provider returns to `{base_url}/login/oauth2/code/{registrationId}`, which redirects the browser to the frontend page with `?state=`; ' +
      'exchange it at `GET /api/v1/app/oauth2/callback`. Unknown registrationId: 404.',
  })
  @ApiParam({ name: 'registrationId', example: 'github-app' })
  @ApiEnvelope(OAuth2AuthUrlResponse)
  @ApiError(400, 10000, 'redirectUri is not an allowed address')
  @ApiError(404, 404, 'unknown registrationId')
  @ApiError(503, 503, 'the identity provider cannot be reached (OIDC discovery)')
  async authUrl(
    @Param('registrationId') registrationId: string,
    @Query() q: RedirectQuery,
    @Client() client: ClientFacts,
    @Res({ passthrough: true }) res: Response,
  ): Promise<OAuth2AuthUrlResponse> {
    const reg = this.registry.get(registrationId);
    const kind =
      reg.provider === 'wechat-open' ? 'wechat-qrconnect' : reg.provider === 'wechat-mp' ? 'wechat-mobile' : 'standard';
    const started = await this.logins.start(reg, client, { kind, redirectUri: q.redirectUri, viaBegin: true });
    res.append('Set-Cookie', started.setCookie);
    return started.authorization;
  }

  @Public()
  @Throttle({ default: { limit: 60, ttl: 60_000 } })
  @Get('callback')
  @ApiOperation({
    summary: 'Exchange a state for the login result (once)',
    description:
      'The state comes from the frontend page redirect, or is the polled QR state / sceneStr once it is AUTHORIZED (2). ' +
      'Each state can be exchanged once; an unknown, expired or used state is refused with code 10003 (HTTP 400). ' +
      'A QR state needs the `oauth2_binding` cookie of the page that created the QR code; any other state needs it whenever the request carries ' +
      'that cookie or is a same-origin fetch: another browser is refused with 403.',
  })
  @ApiEnvelope(OAuth2LoginResponse, { description: MFA_NOTE })
  @ApiError(403, 403, 'the login belongs to another browser')
  @ApiError(400, 10003, 'state unknown, expired or already exchanged')
  @ApiError(423, 10008, 'account disabled')
  callback(@Query() q: StateQuery, @Client() client: ClientFacts): Promise<OAuth2LoginResult> {
    return this.logins.exchange(q.state, client);
  }

  @Public()
  @Get('qrcode/state/:state')
  @ApiOperation({
    summary: 'Poll the scan / authorization state of a QR login',
    description:
      '`qrcodeState`: 0 WAITED, 1 SCANNED, 2 AUTHORIZED, 3 CANCELED, 4 EXPIRED. Unknown state: 404 envelope; an expired one answers 4.',
  })
  @ApiParam({ name: 'state', example: 'Yl3cF0rj2kqz8V1mQw7xPp4nD6sT9bLe' })
  @ApiEnvelope(OAuth2QRCodeStateResponse)
  @ApiError(404, 404, 'unknown state')
  qrcodeState(@Param('state') state: string): Promise<OAuth2QRCodeStateResponse> {
    return this.logins.qrcodeState(state);
  }
}
