import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { Clock } from '@app/platform';
import type { ObjectStorage } from '@app/storage';
import { GatewayConfig } from '../config/gateway.config';
import { GeneratedImageRow, GeneratedImagesRepository } from './generated-images.repository';
import { MEDIA_STORAGE } from './media-storage';

const EVERY_MS = 5 * 60_000;
const HOUR_MS = 3_600_000;
/** Rows read and deleted per statement. */
const BATCH = 500;
/** Objects deleted at once by one replica. */
const PARALLEL_DELETES = 8;

/**
 * At start and every five minutes, deletes the generated images (objects and rows) and the holds of calls that
 * never finished, stored before now (the Clock) minus AI_IMAGES_RETENTION_HOURS: their URLs then answer 404. Any
 * replica may run it at the same time as others: deleting an object is idempotent, and a row is deleted (and its
 * bytes taken from its key) once. The object goes before its row, so a sweep cut short leaves rows to retry, never
 * objects nothing names.
 */
@Injectable()
export class GeneratedImagesSweeper implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly log = new Logger('GeneratedImages');
  private timer?: NodeJS.Timeout;
  private sweeping: Promise<number> | null = null;

  constructor(
    private readonly images: GeneratedImagesRepository,
    @Inject(MEDIA_STORAGE) private readonly storage: ObjectStorage,
    private readonly config: GatewayConfig,
    private readonly clock: Clock,
  ) {}

  onApplicationBootstrap(): void {
    this.timer = setInterval(() => void this.sweep(), EVERY_MS);
    this.timer.unref();
    void this.sweep(); // a replica restarted more often than the interval still sweeps
  }

  /** One sweep unless one is running in this replica; answers how many rows went. */
  sweep(): Promise<number> {
    this.sweeping ??= this.sweepOnce().finally(() => (this.sweeping = null));
    return this.sweeping;
  }

  private async sweepOnce(): Promise<number> {
    const cutoff = new Date(this.clock.now() - this.config.AI_IMAGES_RETENTION_HOURS * HOUR_MS);
    let total = 0;
    let after: GeneratedImageRow | null = null;
    try {
      for (;;) {
        const rows = await this.images.expired(cutoff, after, BATCH);
        if (rows.length === 0) break;
        total += await this.images.forget(await this.deleteObjects(rows));
        after = rows[rows.length - 1];
        if (rows.length < BATCH) break;
      }
      if (total) this.log.log(`deleted ${total} generated image(s) and hold(s) older than the retention`);
    } catch (e) {
      this.log.error(`generated images retention sweep failed: ${(e as Error).message}`);
    }
    return total;
  }

  /** Deletes the rows' objects; answers the ids of the rows whose object is gone (a hold has none). */
  private async deleteObjects(rows: GeneratedImageRow[]): Promise<string[]> {
    const gone: string[] = [];
    for (let i = 0; i < rows.length; i += PARALLEL_DELETES) {
      await Promise.all(
        rows.slice(i, i + PARALLEL_DELETES).map(async (row) => {
          try {
            if (row.storage_key) await this.storage.delete(row.storage_key);
            gone.push(row.id);
          } catch (e) {
            this.log.warn(`generated image ${row.storage_key} not deleted (next sweep): ${(e as Error).message}`);
          }
        }),
      );
    }
    return gone;
  }

  onApplicationShutdown(): void {
    if (this.timer) clearInterval(this.timer);
  }
}
