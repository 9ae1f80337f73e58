import { Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { BusinessException, ErrorCode, msg } from '@app/envelope';
import { Clock } from '@app/platform';
import { MembershipConfig } from '../config/membership.config';
import { SessionClient } from './client-facts';
import { MemberSession } from './member-session.entity';
import { hashRefreshToken, newRefreshToken, openSuccessor, sealSuccessor } from './refresh-token.crypto';
import { SessionLiveness, SessionsRepository } from './sessions.repository';

const MAX_CACHED_SESSIONS = 50_000;

/** How a new session was authenticated (amr) and, when a second factor was shown, how strongly. */
export interface SessionAuthentication {
  amr: string[];
  factorStrength: number;
}

export interface SessionTokens {
  session: MemberSession;
  refreshToken: string;
  /** Lifetime of `refreshToken` in ms. */
  refreshExpiresIn: number;
}

/** Signed-in clients and their refresh-token chains. */
@Injectable()
export class SessionsService implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('Sessions');
  private sweeper?: NodeJS.Timeout;
  /** Live answers by session id, each with its member's generation when it was read (forget() bumps it). */
  private readonly live = new Map<
    string,
    { memberId: string; generation: number; value: SessionLiveness; until: number }
  >();
  private readonly generation = new Map<string, number>();

  constructor(
    private readonly sessions: SessionsRepository,
    private readonly config: MembershipConfig,
    private readonly clock: Clock,
  ) {}

  onModuleInit(): void {
    // Hourly housekeeping; harmless when several replicas run it at once.
    this.sweeper = setInterval(() => void this.sessions.sweep().catch(() => undefined), 60 * 60 * 1000);
    this.sweeper.unref();
  }

  onModuleDestroy(): void {
    if (this.sweeper) clearInterval(this.sweeper);
  }

  /**
   * A new session, recording the client's address and device. `passwordHash`: the hash a password login verified; the session is created only
   * while it is still the member's (null otherwise: a reset or change replaced it meanwhile).
   */
  async start(
    memberId: string,
    loginType: string,
    client: SessionClient,
    passwordHash?: string,
    auth: SessionAuthentication = { amr: [], factorStrength: 0 },
  ): Promise<SessionTokens | null> {
    const refreshToken = newRefreshToken();
    const ttl = this.config.REFRESH_TOKEN_TTL;
    const expiresTime = new Date(this.clock.now() + ttl);
    const session = await this.sessions.createWithToken(
      {
        memberId,
        loginType,
        deviceName: client.device.slice(0, 128),
        ip: client.ip.slice(0, 64),
        lastActiveTime: new Date(),
        expiresTime,
        amr: auth.amr,
        factorStrength: auth.factorStrength,
        factorTime: auth.factorStrength > 0 ? new Date(this.clock.now()) : null,
      },
      { tokenHash: hashRefreshToken(refreshToken), expiresTime },
      this.config.MAX_SESSIONS_PER_MEMBER,
      passwordHash,
    );
    if (!session) return null;
    return { session, refreshToken, refreshExpiresIn: ttl };
  }

  /**
   * Single use, rotated: the first caller gets a successor; callers racing with the same token inside
   * REFRESH_REUSE_GRACE_MS get the same successor; a use after that revokes the whole session.
   */
  async rotate(refreshToken: string): Promise<SessionTokens> {
    const invalid = () => new BusinessException(ErrorCode.UNAUTHORIZED, msg('auth.refreshInvalid'));
    const row = await this.sessions.findToken(hashRefreshToken(refreshToken));
    if (!row) throw invalid();
    const session = await this.sessions.findSession(row.sessionId);
    // Expiry and the reuse grace are decided by the Clock, which also stamps the use (used_time).
    const now = this.clock.now();
    if (!session || session.revokedTime || row.expiresTime.getTime() <= now) throw invalid();

    const ttl = this.config.REFRESH_TOKEN_TTL;
    if (!row.usedTime) {
      const successor = newRefreshToken();
      const expiresTime = new Date(now + ttl);
      const won = await this.sessions.rotate(
        row.id,
        sealSuccessor(successor, refreshToken),
        { tokenHash: hashRefreshToken(successor), expiresTime },
        expiresTime,
        new Date(now),
      );
      if (won) return { session, refreshToken: successor, refreshExpiresIn: ttl };
    }
    // Lost the race or replayed: look at the committed state.
    const used = await this.sessions.findToken(row.tokenHash);
    const usedAgo = used?.usedTime ? this.clock.now() - used.usedTime.getTime() : Infinity;
    if (used?.successorSealed && usedAgo <= this.config.REFRESH_REUSE_GRACE_MS) {
      const successor = openSuccessor(used.successorSealed, refreshToken);
      if (successor) {
        const next = await this.sessions.findToken(hashRefreshToken(successor));
        if (next)
          return {
            session,
            refreshToken: successor,
            refreshExpiresIn: Math.max(0, next.expiresTime.getTime() - this.clock.now()),
          };
      }
    }
    // Through revoke(): this replica's session-check cache forgets the member at once.
    await this.revoke(session.memberId, session.id, 'refresh_reuse');
    this.logger.warn(`refresh token reuse detected; session ${session.id} of member ${session.memberId} revoked`);
    throw invalid();
  }

  list(memberId: string): Promise<MemberSession[]> {
    return this.sessions.listActive(memberId);
  }

  revoke(memberId: string, sessionId: string, reason: string): Promise<boolean> {
    this.forget(memberId);
    return this.sessions.revoke(memberId, sessionId, reason).finally(() => this.forget(memberId));
  }

  revokeAll(memberId: string, reason: string, exceptSessionId?: string): Promise<number> {
    this.forget(memberId);
    return this.sessions.revokeAll(memberId, reason, exceptSessionId).finally(() => this.forget(memberId));
  }

  /**
   * Whether the session is live and its member enabled. A live answer is reused by this replica for
   * SESSION_CHECK_CACHE_MS (default 2 s): it saved a database round trip on almost every authenticated
   * request (npm run bench). A revocation through this replica drops the member's entries at once; one
   * through another replica (or a member disabled) takes effect here within SESSION_CHECK_CACHE_MS.
   */
  async liveness(sessionId: string, memberId: string) {
    const ttl = this.config.SESSION_CHECK_CACHE_MS;
    if (ttl <= 0) return this.sessions.liveness(sessionId, memberId);
    const now = Date.now();
    const hit = this.live.get(sessionId);
    const generation = this.generation.get(memberId) ?? 0;
    if (hit && hit.until > now && hit.memberId === memberId && hit.generation === generation) return hit.value;
    const value = await this.sessions.liveness(sessionId, memberId);
    const usable = value && !value.revoked && !value.expired && value.memberStatus === 'active';
    // Not stored when a revocation of this member started meanwhile (the answer may predate it).
    if (usable && (this.generation.get(memberId) ?? 0) === generation) {
      if (this.live.size >= MAX_CACHED_SESSIONS) this.live.clear();
      this.live.set(sessionId, { memberId, generation, value, until: now + ttl });
    }
    return value;
  }

  /**
   * Drops this replica's cached "live" answers for the member (after its sessions or status changed elsewhere,
   * e.g. admin-members/): a new generation of the member, which the cached answers no longer match. O(1): it
   * walked the whole cache (50 000 entries, ~0.7 ms) twice per revocation, one a member could ask for in a loop
   * with made-up session ids.
   */
  forget(memberId: string): void {
    if (this.generation.size >= MAX_CACHED_SESSIONS) {
      // Generations start again from 0: no cached answer may match an old one.
      this.generation.clear();
      this.live.clear();
    }
    this.generation.set(memberId, (this.generation.get(memberId) ?? 0) + 1);
  }

  factorState(sessionId: string, memberId: string) {
    return this.sessions.factorState(sessionId, memberId);
  }

  recordFactor(sessionId: string, memberId: string, amr: string[], strength: number): Promise<boolean> {
    return this.sessions.recordFactor(sessionId, memberId, amr, strength, new Date(this.clock.now()));
  }

  touch(sessionId: string): Promise<void> {
    return this.sessions.touch(sessionId);
  }
}
