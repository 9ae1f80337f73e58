import { ObjectStorage, objectStorageFor } from '@app/storage';
import { GatewayConfig } from '../config/gateway.config';

/** Injection token of the ObjectStorage holding generated media. */
export const MEDIA_STORAGE = Symbol('MEDIA_STORAGE');

/** DATA_DIR/media on local disk, or an S3-compatible bucket when STORAGE_DRIVER=s3 (several replicas). */
export function mediaStorageFor(config: GatewayConfig): ObjectStorage {
  return objectStorageFor(config, 'media');
}

/** `{cdn_url}`: CDN_URL when set, else `/cdn` on the address the client used. */
export function cdnBase(
  config: GatewayConfig,
  req: { protocol: string; get(name: string): string | undefined },
): string {
  if (config.CDN_URL) return config.CDN_URL.replace(/\/+$/, '');
  return `${req.protocol}://${req.get('host')}/cdn`;
}

export const CONTENT_TYPES: Record<string, string> = {
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  webp: 'image/webp',
  gif: 'image/gif',
};
