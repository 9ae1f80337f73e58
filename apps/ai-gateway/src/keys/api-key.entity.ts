import {
  Column,
  CreateDateColumn,
  Entity,
  JoinColumn,
  ManyToOne,
  PrimaryGeneratedColumn,
  UpdateDateColumn,
} from 'typeorm';
import { LimitColumnsEmbed } from '../limits/limit-columns';
import { Project } from '../projects/project.entity';

/** An issued API key. Only its SHA-256 hash is stored; `prefix` is the part shown in lists. */
@Entity('ai_api_keys')
export class ApiKey {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ type: 'varchar', length: 100 })
  name: string;

  @Column({ type: 'varchar', length: 32 })
  prefix: string;

  @Column({ name: 'key_hash', type: 'char', length: 64, select: false })
  keyHash: string;

  /** Endpoint scopes the key may call; null means all. */
  @Column({ type: 'text', array: true, nullable: true })
  scopes: string[] | null;

  /** Public model names the key may use; null means all. */
  @Column({ type: 'text', array: true, nullable: true })
  models: string[] | null;

  @Column(() => LimitColumnsEmbed, { prefix: false })
  limits: LimitColumnsEmbed;

  /** The project the key belongs to (its limits apply on top of the key's), or null. */
  @Column({ name: 'project_id', type: 'uuid', nullable: true })
  projectId: string | null;

  @ManyToOne(() => Project, { nullable: true })
  @JoinColumn({ name: 'project_id' })
  project?: Project | null;

  /** Everything the key ever spent, in yuan (its budgets count per period in ai_budget_usage). */
  @Column({ name: 'spent_yuan', type: 'numeric', precision: 20, scale: 10, default: 0 })
  spentYuan: string;

  @Column({ name: 'expires_at', type: 'timestamptz', nullable: true })
  expiresAt: Date | null;

  @Column({ name: 'revoked_at', type: 'timestamptz', nullable: true })
  revokedAt: Date | null;

  @Column({ name: 'last_used_at', type: 'timestamptz', nullable: true })
  lastUsedAt: Date | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;
}
