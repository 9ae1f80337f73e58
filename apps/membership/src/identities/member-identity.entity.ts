import { Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';

/**
 * An external identity linked to a member: (provider, subject) is unique, so the same third-party
 * account always logs into the same member. `provider` names the subject's namespace
 * (`github`, `gitee`, `oidc:<issuer>`, `oauth2:<authorization origin>`, `wechat:<appid>`), which
 * survives renaming a registration; WeChat's `unionId` joins website and official-account identities.
 */
/** The avatar_url column's length. */
export const AVATAR_URL_MAX_LENGTH = 1024;

/** A provider's avatar URL as kept: one too long for the column is dropped (a cut URL leads nowhere). */
export function keptAvatarUrl(url: string | null | undefined): string | null {
  return url && url.length <= AVATAR_URL_MAX_LENGTH ? url : null;
}

@Entity('member_identities')
@Index('uq_member_identities_subject', ['provider', 'subject'], { unique: true })
export class MemberIdentity {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ name: 'member_id', type: 'bigint' })
  memberId: string;

  @Column({ type: 'varchar', length: 255 })
  provider: string;

  @Column({ type: 'varchar', length: 255 })
  subject: string;

  /** Registration that created or last used the link (informational). */
  @Column({ name: 'registration_id', type: 'varchar', length: 64 })
  registrationId: string;

  @Column({ name: 'union_id', type: 'varchar', length: 128, nullable: true })
  unionId: string | null;

  @Column({ type: 'varchar', length: 128, nullable: true })
  nickname: string | null;

  @Column({ name: 'avatar_url', type: 'varchar', length: AVATAR_URL_MAX_LENGTH, nullable: true })
  avatarUrl: string | null;

  @CreateDateColumn({ name: 'created_time', type: 'timestamptz' })
  createdTime: Date;

  @Column({ name: 'last_login_time', type: 'timestamptz', nullable: true })
  lastLoginTime: Date | null;
}
