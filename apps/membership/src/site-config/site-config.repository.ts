import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { AuditContext, AuditLog } from '@app/audit';
import { SiteSetting } from './site-setting.entity';

/** The only place that reads or writes site settings. */
@Injectable()
export class SiteConfigRepository {
  constructor(
    private readonly db: DataSource,
    private readonly audit: AuditLog,
  ) {}

  all(): Promise<SiteSetting[]> {
    return this.db.getRepository(SiteSetting).find({ order: { key: 'ASC' } });
  }

  /** Upserts the given values and deletes keys set to null, with the audit row (the keys' old and new values), in one transaction. */
  async apply(values: Record<string, string | null>, updatedBy: string | null, ctx: AuditContext): Promise<void> {
    await this.db.transaction(async (m) => {
      const keys = Object.keys(values);
      const rows = await m.query<Array<{ key: string; value: string }>>(
        `SELECT key, value FROM site_settings WHERE key = ANY($1) FOR UPDATE`,
        [keys],
      );
      const before = Object.fromEntries(keys.map((k) => [k, rows.find((r) => r.key === k)?.value ?? null]));
      for (const [key, value] of Object.entries(values)) {
        if (value === null) {
          await m.query(`DELETE FROM site_settings WHERE key = $1`, [key]);
        } else {
          await m.query(
            `INSERT INTO site_settings (key, value, updated_time, updated_by) VALUES ($1, $2, now(), $3)
             ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_time = now(), updated_by = excluded.updated_by`,
            [key, value, updatedBy],
          );
        }
      }
      await this.audit.record(m, {
        ...ctx,
        action: 'site_config.updated',
        target: { type: 'site_config', id: null },
        before,
        after: values,
      });
    });
  }
}
