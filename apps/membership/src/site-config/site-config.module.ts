import { Module } from '@nestjs/common';
import { SiteConfigController } from './site-config.controller';
import { SiteConfigRepository } from './site-config.repository';
import { SiteConfigService } from './site-config.service';

@Module({
  controllers: [SiteConfigController],
  providers: [SiteConfigRepository, SiteConfigService],
  exports: [SiteConfigService],
})
export class SiteConfigModule {}
