import { Inject, Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { Clock } from '@app/platform';
import type { AuditEntry } from './audit-entry';
import { AUDIT_LOG_OPTIONS, AuditLogOptions, auditTable } from './audit-options';
import { scrubSecrets } from './audit-scrub';

/** Something that runs SQL: a TypeORM EntityManager inside a transaction (or a QueryRunner's manager). */
export type SqlRunner = Pick<EntityManager, 'query'>;

/**
 * Appends to the app's audit log. Always called with the EntityManager of the transaction that makes
 * the change, so the row exists exactly when the change does. The table refuses UPDATE, and DELETE
 * outside the retention sweep (audit-migrations.ts): there is no other write path.
 */
@Injectable()
export class AuditLog {
  private readonly table: string;

  constructor(
    @Inject(AUDIT_LOG_OPTIONS) options: AuditLogOptions,
    private readonly clock: Clock,
  ) {
    this.table = auditTable(options);
  }

  async record(manager: SqlRunner, entry: AuditEntry): Promise<void> {
    await manager.query(
      `INSERT INTO ${this.table} (actor_kind, actor_id, action, target_type, target_id, before, after, request_id, address, created_at)
       VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7::jsonb, $8, $9, $10)`,
      [
        entry.actor.kind,
        entry.actor.id,
        entry.action,
        entry.target.type,
        entry.target.id,
        jsonOrNull(entry.before),
        jsonOrNull(entry.after),
        entry.requestId,
        entry.address,
        new Date(this.clock.now()),
      ],
    );
  }
}

function jsonOrNull(value: unknown): string | null {
  const scrubbed = scrubSecrets(value);
  return scrubbed === null ? null : JSON.stringify(scrubbed);
}
