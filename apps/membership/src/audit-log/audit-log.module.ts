import { Module } from '@nestjs/common';
import { AuditLogController } from './audit-log.controller';

/** /api/v1/admin/audit-log; the log itself is libs/audit (AuditLogModule.forRoot in app.module.ts). */
@Module({ controllers: [AuditLogController] })
export class MembershipAuditLogModule {}
