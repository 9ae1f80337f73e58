import { Column, CreateDateColumn, Entity, PrimaryGeneratedColumn, UpdateDateColumn } from 'typeorm';

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

  @Column({ name: 'requests_per_minute', type: 'int', nullable: true })
  requestsPerMinute: number | null;

  /** Yuan; null means no budget. numeric columns come back as strings. */
  @Column({ name: 'budget_yuan', type: 'numeric', precision: 20, scale: 10, nullable: true })
  budgetYuan: string | null;

  @Column({ name: 'spent_yuan', type: 'numeric', precision: 20, scale: 10, default: 0 })
  spentYuan: string;

  @Column({ name: 'reserved_yuan', type: 'numeric', precision: 20, scale: 10, default: 0 })
  reservedYuan: string;

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
