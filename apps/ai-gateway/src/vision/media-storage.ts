import * as path from 'path';
import { LocalDiskStorage, ObjectStorage, S3Storage } from '@app/providers/storage';
import { GatewayConfig } from '../config/gateway.config';

/** Injection token of the ObjectStorage holding generated media. */
export const MEDIA_STORAGE = Symbol('MEDIA_STORAGE');

/** DATA_DIR/media on local disk, or an S3-compatible bucket when STORAGE_DRIVER=s3 (several replicas). */
export function mediaStorageFor(config: GatewayConfig): ObjectStorage {
  if (config.STORAGE_DRIVER === 's3') {
    return new S3Storage({
      bucket: config.S3_BUCKET ?? '',
      region: config.S3_REGION,
      endpoint: config.S3_ENDPOINT,
      accessKeyId: config.S3_ACCESS_KEY_ID,
      secretAccessKey: config.S3_SECRET_ACCESS_KEY,
      forcePathStyle: config.S3_FORCE_PATH_STYLE,
      prefix: config.S3_PREFIX,
    });
  }
  return new LocalDiskStorage(path.join(config.DATA_DIR, 'media'));
}

/** `{cdn_url}`: CDN_URL when set, else `/cdn` on the address the client used. */
export function cdnBase(config: GatewayConfig, req: { protocol: string; get(name: string): string | undefined }): string {
  if (config.CDN_URL) return config.CDN_URL.replace(/\/+$/, '');
  return `${req.protocol}://${req.get('host')}/cdn`;
}

export const CONTENT_TYPES: Record<string, string> = { png: 'image/png', jpg: 'image/jpeg', jpeg: 'image/jpeg', webp: 'image/webp', gif: 'image/gif' };
