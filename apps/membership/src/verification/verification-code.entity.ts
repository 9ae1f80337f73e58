import { Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';

export type CodeChannel = 'sms' | 'email';

/** A sent verification code; only its keyed hash is stored. */
@Entity('verification_codes')
@Index('idx_verification_codes_target', ['channel', 'target', 'createdTime'])
export class VerificationCode {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ type: 'varchar', length: 8 })
  channel: CodeChannel;

  @Column({ type: 'varchar', length: 254 })
  target: string;

  @Column({ name: 'code_hash', type: 'char', length: 64 })
  codeHash: string;

  @Column({ type: 'int', default: 0 })
  attempts: number;

  @Column({ name: 'max_attempts', type: 'int' })
  maxAttempts: number;

  @Column({ name: 'expires_time', type: 'timestamptz' })
  expiresTime: Date;

  @Column({ name: 'consumed_time', type: 'timestamptz', nullable: true })
  consumedTime: Date | null;

  @Column({ type: 'varchar', length: 64, nullable: true })
  ip: string | null;

  @CreateDateColumn({ name: 'created_time', type: 'timestamptz' })
  createdTime: Date;
}
