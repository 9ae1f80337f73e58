import { DynamicModule, Module } from '@nestjs/common';
import { AuditLog } from './audit-log';
import { AuditLogReader } from './audit-log-reader.service';
import { AuditLogRepository } from './audit-log.repository';
import { AUDIT_LOG_OPTIONS, AuditLogOptions } from './audit-options';
import { AuditRetentionSweeper } from './audit-retention.sweeper';

/** The audit log of one app; global so any feature's repository can take AuditLog. Controllers stay in the apps (their errors, their guards). */
@Module({})
export class AuditLogModule {
  static forRoot(options: AuditLogOptions): DynamicModule {
    return {
      module: AuditLogModule,
      global: true,
      providers: [
        { provide: AUDIT_LOG_OPTIONS, useValue: options },
        AuditLog,
        AuditLogRepository,
        AuditLogReader,
        AuditRetentionSweeper,
      ],
      exports: [AuditLog, AuditLogReader, AuditLogRepository, AuditRetentionSweeper],
    };
  }
}
