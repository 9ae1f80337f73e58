import { Inject, Injectable, Logger } from '@nestjs/common';
import { randomUUID } from 'crypto';
import { Clock } from '@app/platform';
import type { ObjectStorage } from '@app/storage';
import { GatewayError, GatewayErrorCode } from '../errors';
import { GatewayConfig } from '../config/gateway.config';
import { GeneratedImagesRepository, KeptImage } from './generated-images.repository';
import { AUTO_SIZE_BOUND } from './media-prices';
import { CONTENT_TYPES, MEDIA_STORAGE } from './media-storage';

const HOUR_MS = 3_600_000;
/** Room for what an encoder adds to the pixels (chunks, metadata such as a provenance manifest). */
const IMAGE_OVERHEAD_BYTES = 64 * 1024;

/**
 * The most bytes an image of `size` (WxH, `auto` at AUTO_SIZE_BOUND) is held at: its pixels as 8-bit RGBA, which a
 * PNG, JPEG or WebP of that size does not exceed, plus IMAGE_OVERHEAD_BYTES.
 */
export function largestImageBytes(size: string): number {
  const [w, h] = (size === 'auto' ? AUTO_SIZE_BOUND : size).split('x').map(Number);
  return w * h * 4 + IMAGE_OVERHEAD_BYTES;
}

/** A call's hold on its key's image bytes (GeneratedImageStore.hold). */
export interface ImageHold {
  id: string;
  keyId: string;
  bytes: number;
}

export interface ImageToKeep {
  bytes: Buffer;
  contentType: string;
}

/**
 * Generated images kept at a URL: each key keeps at most AI_IMAGES_MAX_BYTES_PER_KEY of them, counted in
 * PostgreSQL, and each is deleted AI_IMAGES_RETENTION_HOURS after it was stored (GeneratedImagesSweeper).
 */
@Injectable()
export class GeneratedImageStore {
  private readonly log = new Logger('GeneratedImages');

  constructor(
    private readonly images: GeneratedImagesRepository,
    @Inject(MEDIA_STORAGE) private readonly storage: ObjectStorage,
    private readonly config: GatewayConfig,
    private readonly clock: Clock,
  ) {}

  /**
   * Holds room for `n` images of `size` before the upstream is called; 429 insufficient_quota when the key's
   * stored images and this hold would pass AI_IMAGES_MAX_BYTES_PER_KEY.
   */
  async hold(keyId: string, size: string, n: number): Promise<ImageHold> {
    const hold = { id: randomUUID(), keyId, bytes: largestImageBytes(size) * n };
    const max = this.config.AI_IMAGES_MAX_BYTES_PER_KEY;
    if (await this.images.hold(hold.id, keyId, hold.bytes, max, new Date(this.clock.now()))) return hold;
    throw await this.full(keyId, hold.bytes);
  }

  /**
   * Stores the images under new random keys in place of the hold: their rows first (committed), then the objects,
   * so an object never exists without a row the sweep finds. Answers their storage keys.
   */
  async keep(hold: ImageHold, images: ImageToKeep[]): Promise<string[]> {
    const day = new Date(this.clock.now()).toISOString().slice(0, 10).replace(/-/g, '/');
    const kept: KeptImage[] = images.map((image) => {
      const id = randomUUID();
      const ext = Object.entries(CONTENT_TYPES).find(([, type]) => type === image.contentType)?.[0] ?? 'png';
      return { id, storageKey: `images/${day}/${id}.${ext}`, bytes: image.bytes.length };
    });
    const max = this.config.AI_IMAGES_MAX_BYTES_PER_KEY;
    if (!(await this.images.keep(hold.id, hold.keyId, kept, max, new Date(this.clock.now()))))
      throw await this.full(
        hold.keyId,
        kept.reduce((sum, k) => sum + k.bytes, 0),
      );
    try {
      await Promise.all(kept.map((k, i) => this.storage.put(k.storageKey, images[i].bytes, images[i].contentType)));
    } catch (e) {
      await this.drop(kept);
      throw e;
    }
    return kept.map((k) => k.storageKey);
  }

  /** Gives a hold back (the call failed before its images were kept); a failure is left to the sweep. */
  async release(hold: ImageHold): Promise<void> {
    try {
      await this.images.forget([hold.id]);
    } catch (e) {
      this.log.warn(`image hold ${hold.id} not released (the retention sweep will): ${(e as Error).message}`);
    }
  }

  /** Objects and rows of images that could not all be written; what fails here is left to the sweep. */
  private async drop(kept: KeptImage[]): Promise<void> {
    try {
      await Promise.all(kept.map((k) => this.storage.delete(k.storageKey)));
      await this.images.forget(kept.map((k) => k.id));
    } catch (e) {
      this.log.warn(`generated images not dropped (the retention sweep will): ${(e as Error).message}`);
    }
  }

  private async full(keyId: string, requested: number): Promise<GatewayError> {
    const { used, oldest } = await this.images.usage(keyId);
    // Room comes back when the oldest image is deleted; with none stored, the request alone is too large.
    const freed = oldest ? oldest.getTime() + this.config.AI_IMAGES_RETENTION_HOURS * HOUR_MS : undefined;
    return new GatewayError(GatewayErrorCode.ImageStorageFull, {
      max: this.config.AI_IMAGES_MAX_BYTES_PER_KEY,
      used,
      requested,
      retentionHours: this.config.AI_IMAGES_RETENTION_HOURS,
      retryAfterSeconds: freed ? Math.max(1, Math.ceil((freed - this.clock.now()) / 1000)) : undefined,
    });
  }
}
