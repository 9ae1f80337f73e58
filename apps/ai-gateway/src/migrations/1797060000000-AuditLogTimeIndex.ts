import { MigrationInterface, QueryRunner } from 'typeorm';
import { createAuditLogTimeIndex, dropAuditLogTimeIndex } from '@app/audit';

/** The audit log's time index, (created_at, id), built concurrently (libs/audit/src/audit-migrations.ts). */
export class AuditLogTimeIndex1797060000000 implements MigrationInterface {
  name = 'AuditLogTimeIndex1797060000000';
  // CREATE INDEX CONCURRENTLY cannot run in a transaction.
  transaction = false;

  async up(q: QueryRunner): Promise<void> {
    await createAuditLogTimeIndex(q, 'ai_audit_log');
  }

  async down(q: QueryRunner): Promise<void> {
    await dropAuditLogTimeIndex(q, 'ai_audit_log');
  }
}
