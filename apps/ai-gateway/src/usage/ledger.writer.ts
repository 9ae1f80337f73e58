import { Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { GatewayConfig } from '../config/gateway.config';
import { UsageRecord } from './usage-record.entity';

export type LedgerEntry = Omit<UsageRecord, 'id' | 'createdAt'> & { createdAt?: Date };

/**
 * Ledger writes leave the request path: entries queue in memory and are inserted in batches every
 * AI_LEDGER_FLUSH_MS (or at AI_LEDGER_BATCH_SIZE), and on shutdown everything left is written.
 * Budgets do not depend on this: a budgeted key is charged on its row when a call settles; a key
 * without a budget is charged here, with the batch (`chargeLater`).
 */
@Injectable()
export class LedgerWriter implements OnModuleInit, OnApplicationShutdown {
  private readonly log = new Logger('UsageLedger');
  private queue: LedgerEntry[] = [];
  /** Charges of keys without a budget, in units of 1e-10 yuan, written with the next flush. */
  private readonly deferredSpend = new Map<string, number>();
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

  /**
   * Charges a key that has no budget. Nothing is held for such a key, so its spending need not be on
   * the key row before the answer: one UPDATE per key per flush replaces one per call, which made
   * every call of a busy key wait for the previous call's commit on that row (npm run bench).
   */
  chargeLater(keyId: string, costYuan: number): void {
    const units = Math.round(costYuan * 1e10);
    if (units > 0) this.deferredSpend.set(keyId, (this.deferredSpend.get(keyId) ?? 0) + units);
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
    await this.writeDeferredSpend();
    while (this.queue.length) {
      const batch = this.queue.splice(0, this.config.AI_LEDGER_BATCH_SIZE);
      try {
        await this.insert(batch);
      } catch (e) {
        // Kept for the next tick rather than lost; the log names the failure, not the payload.
        this.queue.unshift(...batch);
        this.log.error(`could not write ${batch.length} usage records: ${(e as Error).message}`);
        return;
      }
    }
  }

  /**
   * One INSERT of the whole batch from a single JSON parameter. TypeORM's insert builder spent ~7 % of
   * the gateway's CPU under load handling one bound parameter per column and row (npm run bench
   * profile); the columns still come from the entity's metadata, unset ones take their defaults.
   */
  private async insert(batch: LedgerEntry[]): Promise<void> {
    const cols = this.columns();
    const rows = batch.map((e) => {
      const row: Record<string, unknown> = {};
      for (const c of cols) {
        const v = (e as any)[c.property];
        row[c.name] = v !== undefined ? v : c.createDate ? new Date() : c.fallback;
      }
      return row;
    });
    const names = cols.map((c) => `"${c.name}"`).join(', ');
    await this.db.query(
      `INSERT INTO ${this.table} (${names}) SELECT ${names} FROM jsonb_to_recordset($1::jsonb) AS r(${cols.map((c) => `"${c.name}" ${c.type}`).join(', ')})`,
      [JSON.stringify(rows)],
    );
  }

  private cols?: { name: string; property: string; type: string; createDate: boolean; fallback: unknown }[];
  private table = '';

  private columns() {
    if (this.cols) return this.cols;
    const meta = this.db.getMetadata(UsageRecord);
    this.table = `"${meta.tableName}"`;
    this.cols = meta.columns
      .filter((c) => !c.isGenerated)
      .map((c) => ({
        name: c.databaseName,
        property: c.propertyName,
        type: this.db.driver.normalizeType(c),
        createDate: c.isCreateDate,
        fallback: typeof c.default === 'number' || typeof c.default === 'string' ? c.default : null,
      }));
    return this.cols;
  }

  private async writeDeferredSpend(): Promise<void> {
    if (!this.deferredSpend.size) return;
    const charges = [...this.deferredSpend];
    this.deferredSpend.clear();
    for (const [keyId, units] of charges) {
      try {
        await this.db.query(`UPDATE ai_api_keys SET spent_yuan = spent_yuan + $2::numeric, last_used_at = now() WHERE id = $1`, [keyId, (units / 1e10).toFixed(10)]);
      } catch (e) {
        this.deferredSpend.set(keyId, (this.deferredSpend.get(keyId) ?? 0) + units);
        this.log.error(`could not charge key ${keyId}: ${(e as Error).message}`);
      }
    }
  }

  async onApplicationShutdown(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.flush();
    if (this.queue.length) this.log.error(`${this.queue.length} usage records could not be written at shutdown`);
    if (this.deferredSpend.size) this.log.error(`spending of ${this.deferredSpend.size} keys could not be written at shutdown`);
  }
}
