import { Module } from '@nestjs/common';
import { GatewayConfig } from '../config/gateway.config';
import { UsageModule } from '../usage/usage.module';
import { UpstreamsModule } from '../upstreams/upstreams.module';
import { MediaModels } from './media-models';
import { CdnController } from './cdn.controller';
import { EngineLimits } from './engine-limits';
import { GenerateImageService } from './generate-image.service';
import { MEDIA_STORAGE, mediaStorageFor } from './media-storage';
import { RecognizeImageService } from './recognize-image.service';
import { VisionController } from './vision.controller';

/** /v1/vision/recognize (local engines), /v1/vision/generate + /v1/images/generations (upstream), and /cdn. */
@Module({
  imports: [UsageModule, UpstreamsModule],
  controllers: [VisionController, CdnController],
  providers: [EngineLimits, MediaModels, RecognizeImageService, GenerateImageService, { provide: MEDIA_STORAGE, inject: [GatewayConfig], useFactory: mediaStorageFor }],
  exports: [MEDIA_STORAGE],
})
export class VisionModule {}
