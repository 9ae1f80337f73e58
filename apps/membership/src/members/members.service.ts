import { Injectable, Logger } from '@nestjs/common';
import { randomBytes } from 'crypto';
import { QueryFailedError } from 'typeorm';
import { AuditContext, AuditLog } from '@app/audit';
import { BusinessException, ErrorCode, hasMessage, msg } from '@app/envelope';
import { Clock } from '@app/platform';
import { WebhookOutbox } from '@app/webhooks';
import { PasswordHasher } from '../security/password-hasher';
import { Gender, Member } from './member.entity';
import { MemberOrigin, recordRegistration } from './member-origin';
import { ContactChannel, MembersRepository } from './members.repository';

export interface CreateMemberInput {
  username?: string | null;
  email?: string | null;
  phone?: string | null;
  nickname?: string | null;
  avatarUrl?: string | null;
  /** Plain password (hashed here); omit for phone-code or third-party sign-up. */
  password?: string | null;
  roles?: string[];
  /** The caller proved the email / phone with a code: stored verified, taken back from an unproven claim. */
  emailProven?: boolean;
  phoneProven?: boolean;
  /** Whose turn the password's hash waits in (PasswordHasher): the address of a stranger signing up. */
  hashOwner?: string;
}

/** `null` or absent: leave unchanged; `''`: clear (store NULL). */
export interface ProfileChanges {
  nickname?: string | null;
  avatarUrl?: string | null;
  gender?: Gender | '' | null;
  birthDate?: string | null;
}

const UNIQUE_FIELDS: Record<string, string> = {
  uq_members_username: 'username',
  uq_members_email: 'email',
  uq_members_phone: 'phone',
};

/** Member records: lookup, sign-up (own form, phone code, third parties), profile. */
@Injectable()
export class MembersService {
  private readonly logger = new Logger('Members');

  constructor(
    private readonly members: MembersRepository,
    private readonly hasher: PasswordHasher,
    private readonly audit: AuditLog,
    private readonly outbox: WebhookOutbox,
    private readonly clock: Clock,
  ) {}

  findById(id: string): Promise<Member | null> {
    return this.members.findById(id);
  }

  findByPhone(phone: string): Promise<Member | null> {
    return this.members.findByPhone(phone);
  }

  findByEmail(email: string): Promise<Member | null> {
    return this.members.findByEmail(email);
  }

  /** Login account: username first, then email, then phone. */
  async findByAccount(account: string): Promise<Member | null> {
    return (
      (await this.members.findByUsername(account)) ??
      (account.includes('@') ? await this.members.findByEmail(account) : null) ??
      (await this.members.findByPhone(account))
    );
  }

  /**
   * Creates a member. Without a username one is generated (`m_` + 12 random characters).
   * Throws 10005 naming the taken field (also when a concurrent sign-up wins the race). An email or
   * phone given without proof is stored as an unproven claim; a proven one (`emailProven`,
   * `phoneProven`) is stored verified and removes another member's unproven claim on it: only a
   * verified holder makes a proven address "taken". The member.registered event (with `origin`'s
   * method) commits with the member.
   */
  async create(input: CreateMemberInput, origin: MemberOrigin): Promise<Member> {
    const email = input.email ? input.email.trim().toLowerCase() : null;
    const phone = input.phone ?? null;
    const taken = (m: Member | null, verified: Date | null | undefined, proven: boolean | undefined) =>
      m !== null && (!proven || verified != null);
    const byEmail = email ? await this.members.findByEmail(email) : null;
    const byPhone = phone ? await this.members.findByPhone(phone) : null;
    for (const [field, hit] of [
      ['username', input.username ? (await this.members.findByUsername(input.username)) !== null : false],
      ['email', taken(byEmail, byEmail?.emailVerifiedTime, input.emailProven)],
      ['phone', taken(byPhone, byPhone?.phoneVerifiedTime, input.phoneProven)],
    ] as const) {
      if (hit) throw takenError(field);
    }
    const passwordHash = input.password ? await this.hasher.hash(input.password, input.hashOwner) : null;
    for (let attempt = 0; ; attempt++) {
      if (email && input.emailProven) await this.releaseClaim('email', email);
      if (phone && input.phoneProven) await this.releaseClaim('phone', phone);
      const username =
        input.username ??
        `m_${randomBytes(9)
          .toString('base64url')
          .replace(/[^A-Za-z0-9]/g, '')
          .slice(0, 12)
          .padEnd(12, '0')}`;
      try {
        return await this.members.insert(
          {
            username,
            email,
            phone,
            emailVerifiedTime: email && input.emailProven ? new Date() : null,
            phoneVerifiedTime: phone && input.phoneProven ? new Date() : null,
            nickname: input.nickname ?? null,
            avatarUrl: input.avatarUrl ?? null,
            passwordHash,
            roles: input.roles ?? [],
          },
          (m, member) => recordRegistration(m, member, origin, this.audit, this.outbox, new Date(this.clock.now())),
        );
      } catch (err) {
        const field = uniqueViolation(err);
        if (field === 'username' && !input.username && attempt < 3) continue;
        // An unproven claim made between the release and the insert: release it again.
        if (attempt < 3 && ((field === 'email' && input.emailProven) || (field === 'phone' && input.phoneProven)))
          continue;
        if (field) throw takenError(field);
        throw err;
      }
    }
  }

  /**
   * The proven owner of an address takes it back: the unproven claim on it is removed from whichever
   * member holds it (only from `memberId` when given). A verified holder keeps it.
   */
  async releaseClaim(channel: ContactChannel, address: string, memberId?: string): Promise<void> {
    const released = await this.members.releaseUnprovenClaim(channel, address, memberId);
    if (released.length)
      this.logger.log(`unproven ${channel} claim removed from member ${released.join(', ')}: its owner proved it`);
  }

  /**
   * Binds an address its owner just proved to `memberId` as verified, taking it back from another
   * member's unproven claim. 10005 when another member holds it verified.
   */
  async bindProvenContact(memberId: string, channel: ContactChannel, address: string): Promise<void> {
    const value = channel === 'email' ? address.trim().toLowerCase() : address;
    for (let attempt = 0; ; attempt++) {
      const holder =
        channel === 'email' ? await this.members.findByEmail(value) : await this.members.findByPhone(value);
      if (
        holder &&
        holder.id !== memberId &&
        (channel === 'email' ? holder.emailVerifiedTime : holder.phoneVerifiedTime)
      ) {
        throw takenError(channel);
      }
      if (holder && holder.id !== memberId) await this.releaseClaim(channel, value, holder.id);
      try {
        return await this.members.setVerifiedContact(memberId, channel, value);
      } catch (err) {
        if (attempt < 3 && uniqueViolation(err) === channel) continue;
        throw err;
      }
    }
  }

  async updateProfile(id: string, changes: ProfileChanges): Promise<Member> {
    const values: Partial<Member> = {};
    for (const key of ['nickname', 'avatarUrl', 'gender', 'birthDate'] as const) {
      const value = changes[key];
      // The website sends `avatarUrl: null` for "keep the avatar" (as mortise, whose update skips nulls).
      if (value === undefined || value === null) continue;
      (values as Record<string, unknown>)[key] = value === '' ? null : value;
    }
    if (Object.keys(values).length) await this.members.update(id, values);
    return (await this.members.findById(id))!;
  }

  async setPassword(id: string, password: string): Promise<void> {
    await this.storePasswordHash(id, await this.hasher.hash(password));
  }

  /** Stores a hash made by PasswordHasher (a reset hashes before it uses up its code). */
  async storePasswordHash(id: string, hash: string): Promise<void> {
    await this.members.setPasswordHash(id, hash);
  }

  /** An operator's reset (`npm run admin:create -- --reset-password`): the new hash and its audit row commit together. */
  async resetPassword(id: string, password: string, ctx: AuditContext): Promise<void> {
    const hash = await this.hasher.hash(password);
    await this.members.setPasswordHashRecorded(id, hash, (m) =>
      this.audit.record(m, { ...ctx, action: 'member.password_reset', target: { type: 'member', id } }),
    );
  }

  /**
   * Sets the password only while `verifiedHash` (what the caller checked; null: the member had none)
   * is still the stored hash. The new hash, or null when a reset or change replaced it meanwhile.
   */
  async replacePassword(id: string, verifiedHash: string | null, password: string): Promise<string | null> {
    const hash = await this.hasher.hash(password);
    return (await this.members.setPasswordHash(id, hash, verifiedHash)) ? hash : null;
  }

  /**
   * Re-stores a verified password with current argon2id parameters (bcrypt imports, old params), only
   * over the hash that was verified: a reset in between keeps its password. The stored hash afterwards,
   * or null when the verified one was replaced.
   */
  rehashPassword(id: string, verifiedHash: string, password: string): Promise<string | null> {
    return this.replacePassword(id, verifiedHash, password);
  }

  touchLogin(id: string): Promise<void> {
    return this.members.touchLogin(id);
  }

  addRole(id: string, role: string): Promise<void> {
    return this.members.addRole(id, role);
  }
}

/** 10005 naming the taken field (`data.field`); the message names it in the request's language. */
function takenError(field: string): BusinessException {
  const key = `field.${field}`;
  return new BusinessException(
    ErrorCode.ALREADY_TAKEN,
    msg('members.taken', { field: hasMessage(key) ? msg(key) : field }),
    { details: { field } },
  );
}

function uniqueViolation(err: unknown): string | null {
  if (!(err instanceof QueryFailedError)) return null;
  const e = err.driverError as { code?: string; constraint?: string };
  if (e?.code !== '23505') return null;
  return UNIQUE_FIELDS[e.constraint ?? ''] ?? 'account';
}
