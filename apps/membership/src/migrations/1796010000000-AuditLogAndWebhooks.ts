import { MigrationInterface, QueryRunner } from 'typeorm';
import { createAuditLogTable, dropAuditLogTable } from '@app/audit';
import { createWebhookTables, dropWebhookTables } from '@app/webhooks';

/** The membership audit log (append-only) and its webhook endpoints, outbox and delivery log (libs/audit, libs/webhooks). */
export class AuditLogAndWebhooks1796010000000 implements MigrationInterface {
  name = 'AuditLogAndWebhooks1796010000000';

  async up(q: QueryRunner): Promise<void> {
    await createAuditLogTable(q, 'audit_log');
    await createWebhookTables(q, '');
  }

  async down(q: QueryRunner): Promise<void> {
    await dropWebhookTables(q, '');
    await dropAuditLogTable(q, 'audit_log');
  }
}
