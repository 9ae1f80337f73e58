import { Controller, Get, Query } from '@nestjs/common';
import { ApiOperation, ApiProperty, ApiPropertyOptional, ApiTags } from '@nestjs/swagger';
import { Throttle } from '@nestjs/throttler';
import { IsOptional, Matches } from 'class-validator';
import { Public } from '@app/auth';
import { ApiEnvelope } from '@app/envelope';
import { OAuth2ClientRegistry } from './clients/oauth2-client.registry';
import { APP_TYPE } from './clients/oauth2-client-registration';
import { ApiError } from './oauth2-errors.doc';

/** mortise `OAuth2ProviderInfo`: what a login page needs to draw a button, nothing secret. */
export class OAuth2ProviderInfo {
  @ApiProperty({
    example: 'github-app',
    description: 'Start the login with GET /api/v1/app/oauth2/auth-url/{registrationId}',
  })
  registrationId: string;
  @ApiProperty({ example: 'GitHub', description: 'Button label (clients file `clientName`; default per provider)' })
  clientName: string;
  @ApiProperty({
    example: 'i-simple-icons-github',
    description: 'Iconify class (clients file `icon`; default per provider)',
  })
  icon: string;
}

export class OAuth2ProvidersQuery {
  @ApiPropertyOptional({
    example: 'site',
    description:
      'Login page asking (`site`, `admin`, ...): only clients whose `appTypes` include it, or that declare none. Absent: every client.',
  })
  @IsOptional()
  @Matches(APP_TYPE, { message: 'appType must be 1-32 letters, digits, _ or -' })
  appType?: string;
}

/** The login page's provider list, at mortise's path (`AuthController#listOAuth2Providers`). */
@ApiTags('OAuth 2.0 and WeChat login')
@Controller('api/v1/admin/auth')
export class OAuth2ProvidersController {
  constructor(private readonly registry: OAuth2ClientRegistry) {}

  @Public()
  @Throttle({ default: { limit: 120, ttl: 60_000 } })
  @Get('oauth2-providers')
  @ApiOperation({
    summary: 'Third-party login buttons of a login page (open, no secrets)',
    description:
      'The configured OAuth 2.0 / OIDC / WeChat clients of OAUTH2_CLIENTS_FILE in file order, as `{registrationId, clientName, icon}` ' +
      '(the mortise website calls it with `?appType=site` and renders one button each). Ids, client ids, secrets and endpoints are never listed.',
  })
  @ApiEnvelope(OAuth2ProviderInfo, { isArray: true })
  @ApiError(400, 10000, 'appType is not a name')
  list(@Query() q: OAuth2ProvidersQuery): OAuth2ProviderInfo[] {
    return this.registry
      .all()
      .filter((r) => !q.appType || !r.appTypes || r.appTypes.includes(q.appType))
      .map((r) => ({ registrationId: r.registrationId, clientName: r.clientName, icon: r.icon }));
  }
}
