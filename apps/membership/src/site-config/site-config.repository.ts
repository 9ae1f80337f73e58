import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { SiteSetting } from './site-setting.entity';

/** The only place that reads or writes site settings. */
@Injectable()
export class SiteConfigRepository {
  constructor(private readonly db: DataSource) {}

  all(): Promise<SiteSetting[]> {
    return this.db.getRepository(SiteSetting).find({ order: { key: 'ASC' } });
  }

  /** Upserts the given values and deletes keys set to null, in one transaction. */
  async apply(values: Record<string, string | null>, updatedBy: string): Promise<void> {
    await this.db.transaction(async (m) => {
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
    });
  }
}
