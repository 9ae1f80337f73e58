import { Column, CreateDateColumn, Entity, PrimaryGeneratedColumn, UpdateDateColumn } from 'typeorm';
import { LimitColumnsEmbed } from '../limits/limit-columns';

/** A project owns keys; its limits and budgets bind all of its keys together, on top of each key's own. */
@Entity('ai_projects')
export class Project {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ type: 'varchar', length: 100 })
  name: string;

  @Column(() => LimitColumnsEmbed, { prefix: false })
  limits: LimitColumnsEmbed;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;
}
