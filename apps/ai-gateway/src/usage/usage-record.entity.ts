import { Column, CreateDateColumn, Entity, PrimaryGeneratedColumn } from 'typeorm';

export type UsageStatus = 'ok' | 'failed' | 'aborted' | 'cached';

/** One metered call in the usage ledger. */
@Entity('ai_usage_records')
export class UsageRecord {
  @PrimaryGeneratedColumn('identity', { type: 'bigint', generatedIdentity: 'ALWAYS' })
  id: string;

  /** Made when the call settles; unique, so a batch written twice adds nothing the second time. */
  @Column({ name: 'entry_id', type: 'uuid', nullable: true })
  entryId: string | null;

  @Column({ name: 'key_id', type: 'uuid', nullable: true })
  keyId: string | null;

  @Column({ type: 'varchar', length: 64 })
  endpoint: string;

  @Column({ type: 'varchar', length: 128 })
  model: string;

  @Column({ type: 'varchar', length: 128, nullable: true })
  provider: string | null;

  @Column({ name: 'prompt_tokens', type: 'int', default: 0 })
  promptTokens: number;

  @Column({ name: 'completion_tokens', type: 'int', default: 0 })
  completionTokens: number;

  @Column({ type: 'numeric', precision: 12, scale: 3, default: 0 })
  seconds: string;

  @Column({ type: 'int', default: 0 })
  characters: number;

  @Column({ type: 'int', default: 0 })
  images: number;

  @Column({ type: 'int', default: 1 })
  calls: number;

  @Column({ name: 'cost_yuan', type: 'numeric', precision: 20, scale: 10, default: 0 })
  costYuan: string;

  @Column({ type: 'varchar', length: 16 })
  status: UsageStatus;

  @Column({ name: 'http_status', type: 'int', nullable: true })
  httpStatus: number | null;

  @Column({ type: 'varchar', length: 500, nullable: true })
  error: string | null;

  @Column({ name: 'latency_ms', type: 'int', default: 0 })
  latencyMs: number;

  @Column({ name: 'request_id', type: 'varchar', length: 128, nullable: true })
  requestId: string | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}
