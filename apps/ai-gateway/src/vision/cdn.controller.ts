import { Controller, Get, Inject, Param, Req, Res } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { Public } from '@app/auth';
import { clientLimitKey } from '@app/platform';
import { GatewayError, GatewayErrorCode } from '../errors';
import { DownloadSlots, isSafeKey, ObjectStorage, serveObject } from '@app/storage';
import { GatewayConfig } from '../config/gateway.config';
import { ApiOpenAiErrors } from '../http/openai-error.doc';
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
    private readonly downloads: DownloadSlots,
  ) {}

  @Public()
  @Get('images/*path')
  @ApiOperation({
    summary: 'A generated image (public URL returned by /v1/vision/generate and /v1/images/*)',
    description:
      'Served until AI_IMAGES_RETENTION_HOURS after it was generated; then 404 not_found. HEAD answers the same ' +
      'headers from the size of the stored object, without reading its bytes. At most DOWNLOADS_PER_NETWORK downloads from ' +
      'one network at once (429), DOWNLOADS_IN_FLIGHT_MAX from everyone (503).',
  })
  @ApiOpenAiErrors(404, 429, 503)
  async image(@Param('path') path: string | string[], @Req() req: Request, @Res() res: Response): Promise<void> {
    const key = `images/${Array.isArray(path) ? path.join('/') : path}`;
    const ext = key.split('.').pop()!.toLowerCase();
    const notFound = new GatewayError(GatewayErrorCode.ImageNotFound);
    if (!isSafeKey(key) || !CONTENT_TYPES[ext]) throw notFound;
    this.admit(req, res);
    // Express answers HEAD with this handler: a stat, never the bytes (a GetObject would be drained whole at full
    // speed for Node to discard).
    if (req.method === 'HEAD') {
      const stat = await this.storage.stat(key);
      if (!stat) throw notFound;
      this.imageHeaders(res, ext, stat.size);
      res.end();
      return;
    }
    const object = await this.storage.get(key);
    if (!object) throw notFound;
    this.imageHeaders(res, ext, object.size);
    serveObject(object, res, this.config.REQUEST_TIMEOUT_MS);
  }

  /** The headers of an image's answer, alike for GET and HEAD. */
  private imageHeaders(res: Response, ext: string, size: number | undefined): void {
    res.setHeader('Content-Type', CONTENT_TYPES[ext]);
    // Cached no longer than the image lives: a cache keeping it a year would outlive the retention.
    res.setHeader('Cache-Control', `public, max-age=${this.config.AI_IMAGES_RETENTION_HOURS * 3600}, immutable`);
    res.setHeader('X-Content-Type-Options', 'nosniff');
    if (size !== undefined) res.setHeader('Content-Length', String(size));
  }

  /** A slot of the replica's downloads (libs/storage/src/download-slots.ts), given back when the answer ends. */
  private admit(req: Request, res: Response): void {
    const refused = this.downloads.take(clientLimitKey(req, this.config.RATE_LIMIT_IPV6_PREFIX), res);
    if (refused === 'network')
      throw new GatewayError(GatewayErrorCode.DownloadsFromNetwork, { max: this.config.DOWNLOADS_PER_NETWORK });
    if (refused === 'replica') throw new GatewayError(GatewayErrorCode.DownloadsBusy);
  }
}
