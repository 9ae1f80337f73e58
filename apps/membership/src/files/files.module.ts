import { Module } from '@nestjs/common';
import { MulterModule } from '@nestjs/platform-express';
import { memoryStorage } from 'multer';
import { DownloadSlots, objectStorageFor } from '@app/storage';
import { MembershipConfig } from '../config/membership.config';
import { FilesController, MediaController } from './files.controller';
import { FilesRepository } from './files.repository';
import { FilesService } from './files.service';
import { UploadAdmission } from './upload-admission';
import { OBJECT_STORAGE } from './files.tokens';

@Module({
  imports: [
    MulterModule.registerAsync({
      inject: [MembershipConfig],
      // One part named "file", held in memory up to the limit; multer stops reading past it (-> 413).
      useFactory: (config: MembershipConfig) => ({
        storage: memoryStorage(),
        limits: { fileSize: config.UPLOAD_MAX_BYTES, files: 1, fields: 10, parts: 20, fieldSize: 64 * 1024 },
      }),
    }),
  ],
  controllers: [FilesController, MediaController],
  providers: [
    FilesRepository,
    FilesService,
    UploadAdmission,
    {
      provide: DownloadSlots,
      inject: [MembershipConfig],
      useFactory: (config: MembershipConfig) => new DownloadSlots(config),
    },
    {
      provide: OBJECT_STORAGE,
      inject: [MembershipConfig],
      useFactory: (config: MembershipConfig) => objectStorageFor(config, 'files'),
    },
  ],
})
export class FilesModule {}
