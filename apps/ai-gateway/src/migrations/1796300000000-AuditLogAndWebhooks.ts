import { MigrationInterface, QueryRunner } from 'typeorm';
import { createAuditLogTable, dropAuditLogTable } from '@app/audit';
import { createWebhookTables, dropWebhookTables } from '@app/webhooks';

/** The gateway's audit log (append-only) and its webhook endpoints, outbox and delivery log (libs/audit, libs/webhooks); `ai_` as all its tables. */
export class AuditLogAndWebhooks1796300000000 implements MigrationInterface {
  name = 'AuditLogAndWebhooks1796300000000';

  async up(q: QueryRunner): Promise<void> {
    await createAuditLogTable(q, 'ai_audit_log');
    await createWebhookTables(q, 'ai_');
  }

  async down(q: QueryRunner): Promise<void> {
    await dropWebhookTables(q, 'ai_');
    await dropAuditLogTable(q, 'ai_audit_log');
  }
}
