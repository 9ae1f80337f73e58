import { Controller, Get, Inject, Param, Res } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { Public } from '@app/auth';
import { GatewayError, GatewayErrorCode } from '../errors';
import { isSafeKey, ObjectStorage, serveObject } from '@app/storage';
import { GatewayConfig } from '../config/gateway.config';
import { CONTENT_TYPES, MEDIA_STORAGE } from './media-storage';

/**
 * `{cdn_url}` when CDN_URL is unset: generated images, public and immutable (names are random UUIDs) until the
 * retention sweep deletes them (generated-images.sweeper.ts); then 404.
 */
@ApiTags('vision')
@Controller('cdn')
export class CdnController {
  constructor(
    @Inject(MEDIA_STORAGE) private readonly storage: ObjectStorage,
    private readonly config: GatewayConfig,
  ) {}

  @Public()
  @Get('images/*path')
  @ApiOperation({
    summary: 'A generated image (public URL returned by /v1/vision/generate and /v1/images/*)',
    description: 'Served until AI_IMAGES_RETENTION_HOURS after it was generated; then 404 not_found.',
  })
  async image(@Param('path') path: string | string[], @Res() res: Response): Promise<void> {
    const key = `images/${Array.isArray(path) ? path.join('/') : path}`;
    const ext = key.split('.').pop()!.toLowerCase();
    const notFound = new GatewayError(GatewayErrorCode.ImageNotFound);
    if (!isSafeKey(key) || !CONTENT_TYPES[ext]) throw notFound;
    const object = await this.storage.get(key);
    if (!object) throw notFound;
    res.setHeader('Content-Type', CONTENT_TYPES[ext]);
    // Cached no longer than the image lives: a cache keeping it a year would outlive the retention.
    res.setHeader('Cache-Control', `public, max-age=${this.config.AI_IMAGES_RETENTION_HOURS * 3600}, immutable`);
    res.setHeader('X-Content-Type-Options', 'nosniff');
    if (object.size !== undefined) res.setHeader('Content-Length', String(object.size));
    serveObject(object, res, this.config.REQUEST_TIMEOUT_MS);
  }
}
