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

  /** Queues an entry (kept as given: the caller hands it over). */
  append(entry: LedgerEntry): void {
    entry.createdAt ??= new Date();
    this.queue.push(entry);
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
   * One INSERT of the whole batch from a single JSON parameter: the queued entries as they are
   * (JSON.stringify of the array), read back by property name with json_to_recordset (json, not
   * jsonb: PostgreSQL skips building the binary form); columns left out of an entry take their
   * defaults. TypeORM's insert builder (one bound parameter per column and row) and a per-row copy
   * keyed by column name showed up in the gateway's CPU profile (npm run bench --cpu-prof ai-gateway).
   */
  private async insert(batch: LedgerEntry[]): Promise<void> {
    await this.db.query(this.insertSql(), [JSON.stringify(batch)]);
  }

  private sql?: string;

  private insertSql(): string {
    if (this.sql) return this.sql;
    const meta = this.db.getMetadata(UsageRecord);
    const cols = meta.columns.filter((c) => !c.isGenerated);
    const literal = (v: unknown) => (typeof v === 'number' ? String(v) : `'${String(v).replace(/'/g, "''")}'`);
    const value = (c: (typeof cols)[number]) => {
      const read = `r."${c.propertyName}"`;
      if (c.isCreateDate) return `COALESCE(${read}, now())`;
      return typeof c.default === 'number' || typeof c.default === 'string' ? `COALESCE(${read}, ${literal(c.default)})` : read;
    };
    this.sql =
      `INSERT INTO "${meta.tableName}" (${cols.map((c) => `"${c.databaseName}"`).join(', ')}) ` +
      `SELECT ${cols.map(value).join(', ')} FROM json_to_recordset($1::json) AS r(${cols.map((c) => `"${c.propertyName}" ${this.db.driver.normalizeType(c)}`).join(', ')})`;
    return this.sql;
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
