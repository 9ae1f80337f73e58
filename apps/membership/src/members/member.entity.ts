import { Column, CreateDateColumn, Entity, PrimaryGeneratedColumn, UpdateDateColumn } from 'typeorm';

export type MemberStatus = 'active' | 'disabled';
export type Gender = 'male' | 'female' | 'other';

/** A member of the website. Ids are bigint identities, read and sent as strings. */
@Entity('members')
export class Member {
  @PrimaryGeneratedColumn('identity', { type: 'bigint', generatedIdentity: 'ALWAYS' })
  id: string;

  @Column({ type: 'varchar', length: 32 })
  username: string;

  @Column({ type: 'varchar', length: 254, nullable: true })
  email: string | null;

  @Column({ type: 'varchar', length: 32, nullable: true })
  phone: string | null;

  /** When the email was proven with a code; null: an unproven claim (password login only, see docs/membership/auth.md). */
  @Column({ name: 'email_verified_time', type: 'timestamptz', nullable: true })
  emailVerifiedTime: Date | null;

  /** When the phone was proven with a code; null: an unproven claim (no code login, blocks nobody who proves it). */
  @Column({ name: 'phone_verified_time', type: 'timestamptz', nullable: true })
  phoneVerifiedTime: Date | null;

  /** argon2id PHC string, or a bcrypt hash imported from the old system until the next login. */
  @Column({ name: 'password_hash', type: 'text', nullable: true })
  passwordHash: string | null;

  @Column({ type: 'varchar', length: 64, nullable: true })
  nickname: string | null;

  @Column({ name: 'avatar_url', type: 'varchar', length: 1024, nullable: true })
  avatarUrl: string | null;

  @Column({ type: 'varchar', length: 8, nullable: true })
  gender: Gender | null;

  @Column({ name: 'birth_date', type: 'date', nullable: true })
  birthDate: string | null;

  @Column({ type: 'varchar', length: 16, default: 'active' })
  status: MemberStatus;

  @Column({ name: 'member_level', type: 'int', default: 0 })
  memberLevel: number;

  @Column({ type: 'int', default: 0 })
  points: number;

  @Column({ type: 'text', array: true, default: () => "'{}'" })
  roles: string[];

  @CreateDateColumn({ name: 'created_time', type: 'timestamptz' })
  createdTime: Date;

  @UpdateDateColumn({ name: 'updated_time', type: 'timestamptz' })
  updatedTime: Date;

  @Column({ name: 'last_login_time', type: 'timestamptz', nullable: true })
  lastLoginTime: Date | null;
}
