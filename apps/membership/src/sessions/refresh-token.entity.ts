import { Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';

/** One link of a session's refresh chain. Only the SHA-256 of the token is stored. */
@Entity('member_refresh_tokens')
@Index('idx_member_refresh_tokens_session', ['sessionId'])
export class RefreshToken {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ name: 'session_id', type: 'uuid' })
  sessionId: string;

  @Column({ name: 'token_hash', type: 'char', length: 64, unique: true })
  tokenHash: string;

  @CreateDateColumn({ name: 'created_time', type: 'timestamptz' })
  createdTime: Date;

  @Column({ name: 'expires_time', type: 'timestamptz' })
  expiresTime: Date;

  /** Set when rotated; a second use after the grace window revokes the session. */
  @Column({ name: 'used_time', type: 'timestamptz', nullable: true })
  usedTime: Date | null;

  /** The successor token sealed with a key derived from THIS token, so concurrent tabs get the same successor. */
  @Column({ name: 'successor_sealed', type: 'text', nullable: true })
  successorSealed: string | null;
}
