import { Module } from '@nestjs/common';
import { AuditLogController } from './audit-log.controller';

/** /admin/audit-log; the log itself is libs/audit (AuditLogModule.forRoot in app.module.ts). */
@Module({ controllers: [AuditLogController] })
export class GatewayAuditLogModule {}
