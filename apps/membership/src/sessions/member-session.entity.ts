import { Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';

/** One signed-in client (browser, app). Access tokens carry its id as `sid`; revoking it ends them. */
@Entity('member_sessions')
@Index('idx_member_sessions_member', ['memberId'])
export class MemberSession {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ name: 'member_id', type: 'bigint' })
  memberId: string;

  @Column({ name: 'login_type', type: 'varchar', length: 32 })
  loginType: string;

  @Column({ name: 'device_name', type: 'varchar', length: 128 })
  deviceName: string;

  @Column({ type: 'varchar', length: 64, nullable: true })
  ip: string | null;

  @CreateDateColumn({ name: 'created_time', type: 'timestamptz' })
  createdTime: Date;

  @Column({ name: 'last_active_time', type: 'timestamptz' })
  lastActiveTime: Date;

  /** When the current refresh token expires; rotation moves it forward. */
  @Column({ name: 'expires_time', type: 'timestamptz' })
  expiresTime: Date;

  @Column({ name: 'revoked_time', type: 'timestamptz', nullable: true })
  revokedTime: Date | null;

  @Column({ name: 'revoked_reason', type: 'varchar', length: 32, nullable: true })
  revokedReason: string | null;

  /** How the session was authenticated (RFC 8176 values: pwd, sms, oauth, otp, hwk, swk, mfa); carried in access tokens. */
  @Column({ type: 'text', array: true, default: () => "'{}'" })
  amr: string[];

  /** When a second factor was last shown in this session (sign-in or step-up), by the app's Clock. */
  @Column({ name: 'factor_time', type: 'timestamptz', nullable: true })
  factorTime: Date | null;

  /** How strong that factor was: 0 none, 1 authenticator app, 2 passkey or recovery code (factors/factor-strength.ts). */
  @Column({ name: 'factor_strength', type: 'smallint', default: 0 })
  factorStrength: number;
}
