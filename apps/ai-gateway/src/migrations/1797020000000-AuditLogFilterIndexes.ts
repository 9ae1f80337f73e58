import { MigrationInterface, QueryRunner } from 'typeorm';
import { createAuditLogFilterIndexes, dropAuditLogFilterIndexes } from '@app/audit';

/** An index per filter of the audit log, in page order, built concurrently (libs/audit/src/audit-migrations.ts). */
export class AuditLogFilterIndexes1797020000000 implements MigrationInterface {
  name = 'AuditLogFilterIndexes1797020000000';
  // CREATE INDEX CONCURRENTLY cannot run in a transaction.
  transaction = false;

  async up(q: QueryRunner): Promise<void> {
    await createAuditLogFilterIndexes(q, 'ai_audit_log');
  }

  async down(q: QueryRunner): Promise<void> {
    await dropAuditLogFilterIndexes(q, 'ai_audit_log');
  }
}
