import { Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { BaseConfig, Clock } from '@app/platform';
import { AuditLogRepository } from './audit-log.repository';

const EVERY_MS = 60 * 60_000;
const DAY_MS = 86_400_000;

/** Hourly, drops audit rows older than AUDIT_RETENTION_DAYS (0 keeps them). Any replica may run it: the DELETE is idempotent. */
@Injectable()
export class AuditRetentionSweeper implements OnModuleInit, OnApplicationShutdown {
  private readonly log = new Logger('AuditLog');
  private timer?: NodeJS.Timeout;

  constructor(
    private readonly rows: AuditLogRepository,
    private readonly config: BaseConfig,
    private readonly clock: Clock,
  ) {}

  onModuleInit(): void {
    if (this.config.AUDIT_RETENTION_DAYS === 0) return;
    this.timer = setInterval(() => void this.sweep(), EVERY_MS);
    this.timer.unref();
  }

  async sweep(): Promise<number> {
    if (this.config.AUDIT_RETENTION_DAYS === 0) return 0;
    try {
      const n = await this.rows.sweep(new Date(this.clock.now() - this.config.AUDIT_RETENTION_DAYS * DAY_MS));
      if (n) this.log.log(`dropped ${n} audit log row(s) older than ${this.config.AUDIT_RETENTION_DAYS} days`);
      return n;
    } catch (e) {
      this.log.error(`audit log retention sweep failed: ${(e as Error).message}`);
      return 0;
    }
  }

  onApplicationShutdown(): void {
    if (this.timer) clearInterval(this.timer);
  }
}
