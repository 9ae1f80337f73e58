import { Controller, Get, Param, Query, Res } from '@nestjs/common';
import { ApiOperation, ApiParam, ApiQuery, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { Public } from '@app/auth';
import { RawResponse } from '@app/envelope';
import { ClientFacts } from '../sessions/client-facts';
import { Client } from '../sessions/client.decorator';
import { OAuth2LoginService } from './oauth2-login.service';

/** Where providers send the browser back (the redirect_uri registered at each provider), and the way there. */
@ApiTags('OAuth 2.0 and WeChat login')
@Controller('login/oauth2')
export class OAuth2CallbackController {
  constructor(private readonly logins: OAuth2LoginService) {}

  @Public()
  @RawResponse()
  @Get('authorize/:registrationId')
  @ApiOperation({
    summary: 'Way to the provider (browser navigation target of a login authorizationUrl)',
    description:
      'The `authorizationUrl` of `/auth-url/{registrationId}` and `/wechat/mobile/auth-url` points here. It sets the HttpOnly, SameSite=Lax ' +
      '`oauth2_binding` cookie that ties the login state to this browser (the first browser to open it, unless the one that asked for the URL ' +
      'already holds it) and redirects (302) to the provider. The callback then refuses the state in any other browser (403).',
  })
  @ApiParam({ name: 'registrationId', example: 'github-app' })
  @ApiQuery({ name: 'state', required: true, example: 'Yl3cF0rj2kqz8V1mQw7xPp4nD6sT9bLe' })
  @ApiResponse({
    status: 302,
    description:
      'Redirect to the provider: `https://github.com/login/oauth/authorize?client_id=...&state=Yl3cF0rj2kqz8V1mQw7xPp4nD6sT9bLe`',
  })
  @ApiResponse({ status: 400, description: 'Unknown, expired or foreign state (envelope)' })
  @ApiResponse({ status: 403, description: 'Already opened by another browser (envelope)' })
  async authorize(
    @Param('registrationId') registrationId: string,
    @Query('state') state: unknown,
    @Client() client: ClientFacts,
    @Res() res: Response,
  ): Promise<void> {
    const { location, setCookie } = await this.logins.begin(registrationId, state, client);
    if (setCookie) res.append('Set-Cookie', setCookie);
    res.setHeader('Cache-Control', 'no-store');
    res.setHeader('Location', location);
    res.status(302).end();
  }

  @Public()
  @RawResponse()
  @Get('code/:registrationId')
  @ApiOperation({
    summary: 'Provider callback (browser redirect target)',
    description:
      'Checks the state (single use, bound to the client), exchanges the code (with the PKCE verifier and OIDC nonce), links or creates the member ' +
      'and redirects (302) to the frontend page with `?state=<one-time state>`; on a provider error to the frontend page with `?error=&error_description=`. ' +
      'An unknown, replayed or foreign state is refused with a 400 envelope.',
  })
  @ApiParam({ name: 'registrationId', example: 'github-app' })
  @ApiQuery({
    name: 'state',
    required: true,
    example: 'Yl3cF0rj2kqz8V1mQw7xPp4nD6sT9bLe',
    description: 'The state of the authorization URL',
  })
  @ApiQuery({
    name: 'code',
    required: false,
    example: 'c6a1f0d3e9b24c7f',
    description: 'Authorization code (absent when the user refused)',
  })
  @ApiQuery({ name: 'error', required: false, example: 'access_denied' })
  @ApiQuery({ name: 'error_description', required: false, example: 'End-User aborted interaction' })
  @ApiQuery({
    name: 'iss',
    required: false,
    example: 'https://accounts.google.com',
    description: 'OIDC issuer (RFC 9207), checked when the provider sends it',
  })
  @ApiResponse({
    status: 302,
    description:
      'Redirect to the frontend page: `https://www.example.com/oauth/callback?state=Yl3cF0rj2kqz8V1mQw7xPp4nD6sT9bLe`',
  })
  @ApiResponse({
    status: 400,
    description: '`{"code":400,"message":"Login state is unknown, expired or already used","data":null}`',
  })
  @ApiResponse({
    status: 403,
    description:
      'The state was started in another browser (no matching binding cookie): `{"code":403,"message":"This sign-in was started in another browser; start it again here","data":null}`',
  })
  async callback(
    @Param('registrationId') registrationId: string,
    @Query() query: Record<string, unknown>,
    @Client() client: ClientFacts,
    @Res() res: Response,
  ): Promise<void> {
    const flat: Record<string, string> = {};
    for (const [k, v] of Object.entries(query)) if (typeof v === 'string') flat[k] = v;
    const location = await this.logins.finishCallback(registrationId, flat, client);
    res.setHeader('Cache-Control', 'no-store');
    res.setHeader('Location', location);
    res.status(302).end();
  }
}
