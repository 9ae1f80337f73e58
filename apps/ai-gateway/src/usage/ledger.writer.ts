import { Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { GatewayConfig } from '../config/gateway.config';
import { UsageRecord } from './usage-record.entity';

export type LedgerEntry = Omit<UsageRecord, 'id' | 'createdAt'> & { createdAt?: Date };

/**
 * Ledger writes leave the request path: entries queue in memory and are inserted in batches every
 * AI_LEDGER_FLUSH_MS (or at AI_LEDGER_BATCH_SIZE), and on shutdown everything left is written.
 * Budgets do not depend on this: spending is charged on the key row when a call settles.
 */
@Injectable()
export class LedgerWriter implements OnModuleInit, OnApplicationShutdown {
  private readonly log = new Logger('UsageLedger');
  private queue: LedgerEntry[] = [];
  private timer?: NodeJS.Timeout;
  private flushing: Promise<void> = Promise.resolve();

  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly config: GatewayConfig,
  ) {}

  onModuleInit(): void {
    this.timer = setInterval(() => void this.flush(), this.config.AI_LEDGER_FLUSH_MS);
    this.timer.unref();
  }

  append(entry: LedgerEntry): void {
    this.queue.push({ ...entry, createdAt: entry.createdAt ?? new Date() });
    if (this.queue.length >= this.config.AI_LEDGER_BATCH_SIZE) void this.flush();
  }

  get pending(): number {
    return this.queue.length;
  }

  /** Writes everything queued so far; concurrent calls run one after another. */
  flush(): Promise<void> {
    this.flushing = this.flushing.then(() => this.writeQueued());
    return this.flushing;
  }

  private async writeQueued(): Promise<void> {
    while (this.queue.length) {
      const batch = this.queue.splice(0, this.config.AI_LEDGER_BATCH_SIZE);
      try {
        await this.db.getRepository(UsageRecord).insert(batch as UsageRecord[]);
      } catch (e) {
        // Kept for the next tick rather than lost; the log names the failure, not the payload.
        this.queue.unshift(...batch);
        this.log.error(`could not write ${batch.length} usage records: ${(e as Error).message}`);
        return;
      }
    }
  }

  async onApplicationShutdown(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.flush();
    if (this.queue.length) this.log.error(`${this.queue.length} usage records could not be written at shutdown`);
  }
}
