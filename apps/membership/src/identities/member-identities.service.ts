import { Injectable } from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import { BusinessException, ErrorCode, msg } from '@app/envelope';
import { SharedState } from '@app/platform';
import { Member } from '../members/member.entity';
import { MembersService } from '../members/members.service';
import { ExternalProfile } from './external-profile';
import { keptAvatarUrl, MemberIdentity } from './member-identity.entity';
import { MemberIdentitiesRepository } from './member-identities.repository';

export interface ResolvedMember {
  member: Member;
  identity: MemberIdentity;
  /** The member was created by this login. */
  isNewUser: boolean;
  /** The member can also log in without this third party (password or phone). */
  isBound: boolean;
}

/** Maps external identities to members: find, join by WeChat unionid, or sign up; link and unlink. */
@Injectable()
export class MemberIdentitiesService {
  constructor(
    private readonly identities: MemberIdentitiesRepository,
    private readonly members: MembersService,
    private readonly state: SharedState,
  ) {}

  /** The member behind an external identity, creating the member on first sight. */
  async resolveForLogin(profile: ExternalProfile): Promise<ResolvedMember> {
    return this.withSubjectLock(profile, async () => {
      const existing = await this.identities.findBySubject(profile.provider, profile.subject);
      if (existing) return this.reuse(existing, profile, false);
      if (profile.unionId) {
        const sibling = await this.identities.findByUnionId(profile.unionId);
        if (sibling) {
          const { identity } = await this.identities.insertOrGet(this.row(sibling.memberId, profile));
          return this.reuse(identity, profile, false);
        }
      }
      const member = await this.members.create(
        {
          nickname: profile.nickname ? profile.nickname.slice(0, 64) : null,
          avatarUrl: keptAvatarUrl(profile.avatarUrl),
        },
        { method: profile.provider.startsWith('wechat:') ? 'wechat' : 'oauth', provider: profile.registrationId },
      );
      const { identity } = await this.identities.insertOrGet(this.row(member.id, profile));
      return this.reuse(identity, profile, identity.memberId === member.id);
    });
  }

  /** Links an external identity to a logged-in member; refused when another member already owns it. */
  async link(memberId: string, profile: ExternalProfile): Promise<MemberIdentity> {
    return this.withSubjectLock(profile, async () => {
      const { identity } = await this.identities.insertOrGet(this.row(memberId, profile));
      if (identity.memberId !== memberId) {
        throw new BusinessException(ErrorCode.ALREADY_TAKEN, msg('identities.linkedToOther'), {
          details: { field: 'identity' },
        });
      }
      await this.identities.touch(identity.id, profile);
      return identity;
    });
  }

  list(memberId: string): Promise<MemberIdentity[]> {
    return this.identities.listByMember(memberId);
  }

  /** Unlinks an identity unless it is the member's last way to log in. */
  async unlink(memberId: string, identityId: string): Promise<void> {
    const identity = await this.identities.findOwned(identityId, memberId);
    if (!identity) throw new BusinessException(ErrorCode.NOT_FOUND, msg('identities.notFound'));
    const member = await this.members.findById(memberId);
    const others = (await this.identities.countByMember(memberId)) - 1;
    if (!member?.passwordHash && !member?.phone && others < 1) {
      throw new BusinessException(ErrorCode.CONFLICT, msg('identities.lastLogin'));
    }
    await this.identities.deleteOwned(identityId, memberId);
  }

  private async reuse(identity: MemberIdentity, profile: ExternalProfile, isNewUser: boolean): Promise<ResolvedMember> {
    await this.identities.touch(identity.id, profile);
    const member = await this.members.findById(identity.memberId);
    if (!member) throw new BusinessException(ErrorCode.NOT_FOUND, msg('identities.memberNotFound'));
    return { member, identity, isNewUser, isBound: !!(member.passwordHash || member.phone) };
  }

  private row(memberId: string, p: ExternalProfile): Partial<MemberIdentity> & { provider: string; subject: string } {
    return {
      memberId,
      provider: p.provider.slice(0, 255),
      subject: p.subject.slice(0, 255),
      registrationId: p.registrationId,
      unionId: p.unionId ?? null,
      nickname: p.nickname ? p.nickname.slice(0, 128) : null,
      avatarUrl: keptAvatarUrl(p.avatarUrl),
      lastLoginTime: new Date(),
    };
  }

  /** Serializes first logins of one identity across replicas so two callbacks cannot create two members. */
  private async withSubjectLock<T>(profile: ExternalProfile, fn: () => Promise<T>): Promise<T> {
    const keys = [`identity-lock:${profile.provider}:${profile.subject}`];
    if (profile.unionId) keys.push(`identity-lock:union:${profile.unionId}`);
    const held: string[] = [];
    try {
      for (const key of keys) {
        for (let i = 0; !(await this.state.setIfAbsent(key, '1', 15_000)); i++) {
          if (i >= 50)
            throw new BusinessException(ErrorCode.TOO_MANY_REQUESTS, msg('identities.loginInProgress'), {
              retryAfterSeconds: 1,
            });
          await sleep(100);
        }
        held.push(key);
      }
      return await fn();
    } finally {
      for (const key of held) await this.state.del(key).catch(() => undefined);
    }
  }
}
