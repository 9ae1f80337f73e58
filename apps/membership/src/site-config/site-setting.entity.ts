import { Column, Entity, PrimaryColumn, UpdateDateColumn } from 'typeorm';

/** One site setting ("site.name" -> "My Site"). */
@Entity('site_settings')
export class SiteSetting {
  @PrimaryColumn({ type: 'varchar', length: 100 })
  key: string;

  @Column({ type: 'text' })
  value: string;

  @UpdateDateColumn({ name: 'updated_time', type: 'timestamptz' })
  updatedTime: Date;

  @Column({ name: 'updated_by', type: 'bigint', nullable: true })
  updatedBy: string | null;
}
