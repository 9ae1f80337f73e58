import { Module } from '@nestjs/common';
import { MulterModule } from '@nestjs/platform-express';
import * as path from 'path';
import { memoryStorage } from 'multer';
import { LocalDiskStorage, ObjectStorage, S3Storage } from '@app/providers/storage';
import { MembershipConfig } from '../config/membership.config';
import { FilesController, MediaController } from './files.controller';
import { FilesRepository } from './files.repository';
import { FilesService } from './files.service';
import { OBJECT_STORAGE } from './files.tokens';

export function objectStorageFor(config: MembershipConfig): ObjectStorage {
  if (config.STORAGE_DRIVER === 's3') {
    return new S3Storage({
      bucket: config.S3_BUCKET!,
      region: config.S3_REGION,
      endpoint: config.S3_ENDPOINT,
      accessKeyId: config.S3_ACCESS_KEY_ID,
      secretAccessKey: config.S3_SECRET_ACCESS_KEY,
      forcePathStyle: config.S3_FORCE_PATH_STYLE,
      prefix: config.S3_PREFIX,
    });
  }
  return new LocalDiskStorage(path.resolve(config.DATA_DIR, 'files'));
}

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
  providers: [FilesRepository, FilesService, { provide: OBJECT_STORAGE, inject: [MembershipConfig], useFactory: objectStorageFor }],
})
export class FilesModule {}
