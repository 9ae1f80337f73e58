import { Module } from '@nestjs/common';
import { DownloadSlots } from '@app/storage';
import { MulterModule } from '@nestjs/platform-express';
import { memoryStorage } from 'multer';
import { GatewayConfig } from '../config/gateway.config';
import { UploadsModule } from '../http/uploads.module';
import { TokenizerModule } from '../tokenizer/tokenizer.module';
import { UsageModule } from '../usage/usage.module';
import { UpstreamsModule } from '../upstreams/upstreams.module';
import { MediaModels } from './media-models';
import { CdnController } from './cdn.controller';
import { EngineLimits } from './engine-limits';
import { GenerateImageService } from './generate-image.service';
import { GeneratedImageStore } from './generated-image-store';
import { GeneratedImagesRepository } from './generated-images.repository';
import { GeneratedImagesSweeper } from './generated-images.sweeper';
import { MEDIA_STORAGE, mediaStorageFor } from './media-storage';
import { RecognizeImageService } from './recognize-image.service';
import { VisionController } from './vision.controller';
import { ModerationsController } from './moderations.controller';
import { ModerateContentService } from './moderate-content.service';

/** /v1/vision/recognize (local engines), /v1/vision/generate + /v1/images/generations and edits (upstream), /v1/moderations (deployments), and /cdn. */
@Module({
  imports: [
    UsageModule,
    UpstreamsModule,
    TokenizerModule,
    UploadsModule,
    // /v1/images/edits: up to 16 images and a mask, each at most AI_MEDIA_MAX_IMAGE_BYTES and all together
    // at most AI_MEDIA_MAX_EDIT_BYTES (its Content-Length checked by edit-upload.guard.ts; 413 past either); a 32000-character prompt fits a field.
    MulterModule.registerAsync({
      inject: [GatewayConfig],
      useFactory: (config: GatewayConfig) => ({
        storage: memoryStorage(),
        limits: {
          fileSize: Math.min(config.AI_MEDIA_MAX_IMAGE_BYTES, config.AI_MEDIA_MAX_EDIT_BYTES),
          files: 17,
          fields: 30,
          fieldSize: 128 * 1024,
        },
      }),
    }),
  ],
  controllers: [VisionController, ModerationsController, CdnController],
  providers: [
    EngineLimits,
    MediaModels,
    RecognizeImageService,
    GenerateImageService,
    GeneratedImagesRepository,
    GeneratedImageStore,
    GeneratedImagesSweeper,
    ModerateContentService,
    { provide: MEDIA_STORAGE, inject: [GatewayConfig], useFactory: mediaStorageFor },
    {
      provide: DownloadSlots,
      inject: [GatewayConfig],
      useFactory: (config: GatewayConfig) => new DownloadSlots(config),
    },
  ],
  exports: [MEDIA_STORAGE],
})
export class VisionModule {}
