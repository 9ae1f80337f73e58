import { randomUUID } from 'crypto';
import { Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { Clock, GenAiMetrics } from '@app/platform';
import { GatewayConfig } from '../config/gateway.config';
import { UsageRecord } from './usage-record.entity';

export type LedgerEntry = Omit<UsageRecord, 'id' | 'entryId' | 'createdAt'> & {
  entryId?: string;
  createdAt?: Date;
  /** The key has no budget: its spending is charged when this entry is written (not a column). */
  chargeKey?: boolean;
};

/**
 * Ledger writes leave the request path: entries queue in memory and are inserted in batches every
 * AI_LEDGER_FLUSH_MS (or at AI_LEDGER_BATCH_SIZE), and on shutdown everything left is written.
 * Budgets do not depend on this: a budgeted key is charged on its row when a call settles; a key
 * without a budget is charged here, in the transaction that writes its entries (`chargeKey`).
 * A batch that fails is kept and written again; its entries' ids make that idempotent, since a
 * failure may come after the commit (connection cut before the acknowledgement; test/ai-gateway/ledger-lost-commit.e2e-spec.ts).
 */
@Injectable()
export class LedgerRepository implements OnModuleInit, OnApplicationShutdown {
  private readonly log = new Logger('UsageLedger');
  private queue: LedgerEntry[] = [];
  private timer?: NodeJS.Timeout;
  private flushing: Promise<void> = Promise.resolve();
  /** A write of the full batches is queued behind `flushing` (append). */
  private fullBatchQueued = false;
  /** The last write failed (its batch is back in the queue). */
  private lastWriteFailed = false;
  /** A flush asked for and not yet begun: later askers share it (it writes what is queued when it begins). */
  private nextFlush?: Promise<void>;
  /** Entries per key not yet written (queued or in a write under way): what `flushFor` waits for. */
  private readonly unwritten = new Map<string, number>();
  /** When the last flush a read of everyone's usage asked for was asked (`flushForReport`), on the app's Clock. */
  private reportFlushAt?: number;

  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly config: GatewayConfig,
    private readonly metrics: GenAiMetrics,
    private readonly clock: Clock,
  ) {}

  onModuleInit(): void {
    this.timer = setInterval(() => void this.flush(), this.config.AI_LEDGER_FLUSH_MS);
    this.timer.unref();
  }

  /** Queues an entry (kept as given: the caller hands it over), and counts its cost (ai_gateway_cost_yuan_total). */
  append(entry: LedgerEntry): void {
    // Every charged call of every endpoint passes here exactly once (MeteringService.settle is idempotent).
    this.metrics.charged(entry.model, entry.provider, entry.endpoint, Number(entry.costYuan));
    entry.entryId ??= randomUUID();
    entry.createdAt ??= new Date();
    this.queue.push(entry);
    if (entry.keyId) this.unwritten.set(entry.keyId, (this.unwritten.get(entry.keyId) ?? 0) + 1);
    // A full batch goes at once (one write queued for it, however many entries arrive meanwhile).
    if (this.queue.length >= this.config.AI_LEDGER_BATCH_SIZE && !this.fullBatchQueued) {
      this.fullBatchQueued = true;
      this.flushing = this.flushing.then(() => {
        this.fullBatchQueued = false;
        const size = this.config.AI_LEDGER_BATCH_SIZE;
        return this.writeQueued(this.queue.length - (this.queue.length % size));
      });
    }
  }

  get pending(): number {
    return this.queue.length;
  }

  /**
   * Writes everything queued so far, after the writes under way. Calls made before that flush begins share it
   * (it writes what is queued when it begins, so what they queued too): readers asking at once cost one write.
   */
  flush(): Promise<void> {
    if (this.nextFlush) return this.nextFlush;
    const next = this.flushing.then(() => {
      this.nextFlush = undefined;
      return this.writeQueued(this.queue.length);
    });
    this.nextFlush = next;
    this.flushing = next;
    return next;
  }

  /**
   * What a read of one key's usage waits for: its entries queued so far written, as `flush` does, but no write
   * at all when none of that key's entries is unwritten. A key reading its usage in a loop flushed everyone's
   * buffered entries each time: a write of a few rows per read, the batching lost for all keys.
   */
  flushFor(keyId: string): Promise<void> {
    return this.unwritten.has(keyId) ? this.flush() : Promise.resolve();
  }

  /**
   * What a read of everyone's usage waits for (GET /admin/usage without key_id, GET /admin/upstreams): at most
   * one write per AI_LEDGER_FLUSH_MS asked by such reads, shared by every read in that interval, so the answer
   * has this replica's calls settled up to at most AI_LEDGER_FLUSH_MS before the read. Each of these reads
   * flushed everyone's buffered entries: an operator's console polling under load wrote a few rows per read,
   * the batching lost for all keys. Nothing queued: no write, only the writes under way are waited for.
   */
  flushForReport(): Promise<void> {
    if (this.nextFlush) return this.nextFlush;
    const now = this.clock.now();
    const since = now - (this.reportFlushAt ?? -Infinity);
    // A clock set back counts as stale (the next read writes), not as a write that happened in the future.
    const recent = since >= 0 && since < this.config.AI_LEDGER_FLUSH_MS;
    if (recent || this.queue.length === 0) return this.flushing;
    this.reportFlushAt = now;
    return this.flush();
  }

  /**
   * Writes the first `count` entries queued, in batches of AI_LEDGER_BATCH_SIZE. Only those: entries that
   * arrive while they are written wait for the next flush. Writing until the queue was empty made a
   * flush under steady load a loop of back-to-back transactions of the two or three entries that came in
   * during the last one (four round trips and a commit each), never the batch of a second's calls.
   */
  private async writeQueued(count: number): Promise<void> {
    let left = Math.min(count, this.queue.length);
    while (left > 0) {
      const batch = this.queue.splice(0, Math.min(left, this.config.AI_LEDGER_BATCH_SIZE));
      left -= batch.length;
      try {
        await this.write(batch);
        this.lastWriteFailed = false;
        for (const e of batch) {
          if (!e.keyId) continue;
          const n = (this.unwritten.get(e.keyId) ?? 0) - 1;
          if (n > 0) this.unwritten.set(e.keyId, n);
          else this.unwritten.delete(e.keyId);
        }
      } catch (e) {
        // Kept for the next tick rather than lost; the log names the failure, not the payload.
        this.lastWriteFailed = true;
        this.queue.unshift(...batch);
        this.log.error(`could not write ${batch.length} usage records: ${(e as Error).message}`);
        return;
      }
    }
  }

  /**
   * Inserts the batch (entries already in the table are skipped) and charges keys without a budget
   * for the entries that were new, in one transaction: a retried batch neither doubles rows nor
   * charges twice. One UPDATE per key per batch, in key order so two writers cannot deadlock.
   * The batch goes as one JSON parameter read back with json_to_recordset (one bound parameter, not one
   * per column and row).
   */
  private async write(batch: LedgerEntry[]): Promise<void> {
    if (!batch.some((e) => e.chargeKey)) return void (await this.db.query(this.insertSql(), [JSON.stringify(batch)]));
    await this.db.transaction(async (m) => {
      const written: { entry_id: string }[] = await m.query(this.insertSql(), [JSON.stringify(batch)]);
      const fresh = new Set(written.map((r) => r.entry_id));
      const units = new Map<string, number>();
      for (const e of batch) {
        if (!e.chargeKey || !e.keyId || !fresh.has(e.entryId!)) continue;
        const u = Math.round(Number(e.costYuan) * 1e10);
        if (u > 0) units.set(e.keyId, (units.get(e.keyId) ?? 0) + u);
      }
      for (const [keyId, u] of [...units].sort(([a], [b]) => (a < b ? -1 : 1))) {
        await m.query(
          `UPDATE ai_api_keys SET spent_yuan = spent_yuan + $2::numeric, last_used_at = now() WHERE id = $1`,
          [keyId, (u / 1e10).toFixed(10)],
        );
      }
    });
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
      return typeof c.default === 'number' || typeof c.default === 'string'
        ? `COALESCE(${read}, ${literal(c.default)})`
        : read;
    };
    const entryId = cols.find((c) => c.propertyName === 'entryId')!.databaseName;
    this.sql =
      `INSERT INTO "${meta.tableName}" (${cols.map((c) => `"${c.databaseName}"`).join(', ')}) ` +
      `SELECT ${cols.map(value).join(', ')} FROM json_to_recordset($1::json) AS r(${cols.map((c) => `"${c.propertyName}" ${this.db.driver.normalizeType(c)}`).join(', ')}) ` +
      `ON CONFLICT ("${entryId}") DO NOTHING RETURNING "${entryId}" AS entry_id`;
    return this.sql;
  }

  async onApplicationShutdown(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    // Again while calls settle during the last writes (a stream cut at the end of the grace period settles
    // after the server closed): a flush writes only what was queued when it began. Not after a failed write.
    do await this.flush();
    while (this.queue.length > 0 && !this.lastWriteFailed);
    if (this.queue.length) this.log.error(`${this.queue.length} usage records could not be written at shutdown`);
  }
}
