import { Body, Controller, Get, Put } from '@nestjs/common';
import { ApiOperation, ApiResponse, ApiTags } from '@nestjs/swagger';
import { AuditContext, AuditRequest } from '@app/audit';
import { Public, Roles } from '@app/auth';
import { ApiEnvelope, ErrorEnvelope } from '@app/envelope';
import { SiteConfigResponse, UpdateSiteConfigRequest } from './dtos/site-config.dto';
import { SiteConfigService } from './site-config.service';

/** Site settings: public read, admin write (/api/v1/admin/system/site-config). */
@ApiTags('Site configuration')
@Controller('api/v1/admin/system/site-config')
export class SiteConfigController {
  constructor(private readonly siteConfig: SiteConfigService) {}

  @Public()
  @Get('public')
  @ApiOperation({ summary: 'Public site settings (site.*, seo.*, footer.*); no token needed' })
  @ApiEnvelope(SiteConfigResponse)
  async publicConfig(): Promise<SiteConfigResponse> {
    return { values: await this.siteConfig.values(true) };
  }

  @Get()
  @Roles('viewer')
  @ApiOperation({ summary: 'All site settings (admin or viewer)' })
  @ApiEnvelope(SiteConfigResponse)
  @ApiResponse({ status: 403, description: 'code 403: not an admin', type: ErrorEnvelope })
  async all(): Promise<SiteConfigResponse> {
    return { values: await this.siteConfig.values(false) };
  }

  @Put()
  @Roles('admin')
  @ApiOperation({ summary: 'Set site settings (admin); null deletes a key. Returns every setting.' })
  @ApiEnvelope(SiteConfigResponse)
  @ApiResponse({ status: 400, description: 'code 10000: bad key or value', type: ErrorEnvelope })
  @ApiResponse({ status: 401, description: 'code 401: no or bad token', type: ErrorEnvelope })
  @ApiResponse({ status: 403, description: 'code 403: not an admin', type: ErrorEnvelope })
  async update(@AuditRequest() ctx: AuditContext, @Body() body: UpdateSiteConfigRequest): Promise<SiteConfigResponse> {
    return { values: await this.siteConfig.update(body.values, ctx) };
  }
}
