import * as path from 'path';
import { LocalDiskStorage } from './local-disk.storage';
import { ObjectStorage } from './object-storage';
import { S3Storage } from './s3.storage';

/** The storage settings every app reads (see BaseConfig). */
export interface StorageSettings {
  DATA_DIR: string;
  STORAGE_DRIVER: string;
  S3_BUCKET?: string;
  S3_REGION: string;
  S3_ENDPOINT?: string;
  S3_ACCESS_KEY_ID?: string;
  S3_SECRET_ACCESS_KEY?: string;
  S3_FORCE_PATH_STYLE: boolean;
  S3_PREFIX?: string;
  DOWNLOADS_IN_FLIGHT_MAX: number;
}

/** `folder` under DATA_DIR on local disk, or an S3-compatible bucket under S3_PREFIX (several replicas; keys of the two apps never collide). */
export function objectStorageFor(config: StorageSettings, folder: string): ObjectStorage {
  if (config.STORAGE_DRIVER === 's3') {
    return new S3Storage({
      bucket: config.S3_BUCKET ?? '',
      region: config.S3_REGION,
      endpoint: config.S3_ENDPOINT,
      accessKeyId: config.S3_ACCESS_KEY_ID,
      secretAccessKey: config.S3_SECRET_ACCESS_KEY,
      forcePathStyle: config.S3_FORCE_PATH_STYLE,
      prefix: config.S3_PREFIX,
      // A socket for each download the replica serves at once (download-slots.ts): none waits for one.
      downloadSockets: config.DOWNLOADS_IN_FLIGHT_MAX,
    });
  }
  return new LocalDiskStorage(path.resolve(config.DATA_DIR, folder));
}
