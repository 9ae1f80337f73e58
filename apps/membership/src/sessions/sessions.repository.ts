import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { withoutStatementTimeout } from '@app/database';
import { MemberSession } from './member-session.entity';
import { RefreshToken } from './refresh-token.entity';

export interface SessionLiveness {
  revoked: boolean;
  expired: boolean;
  memberStatus: string;
  roles: string[];
}

/** Used refresh tokens kept per session for replay detection (sessions.service.ts rotate). */
export const USED_TOKENS_KEPT = 16;

/** The only place that reads or writes sessions and their refresh chains. */
@Injectable()
export class SessionsRepository {
  constructor(private readonly db: DataSource) {}

  /**
   * Creates the session and its first refresh token. With `passwordHash` (the hash a password login
   * verified) only while the member still has it, else null and nothing is written. The member row is
   * read FOR SHARE: a concurrent password change waits for this commit (and its revokeAll then sees the
   * session), or has committed and the hash no longer matches. Either way no session outlives a reset.
   */
  async createWithToken(
    session: Partial<MemberSession>,
    token: Partial<RefreshToken>,
    maxSessions: number,
    passwordHash?: string,
  ): Promise<MemberSession | null> {
    return this.db.transaction(async (m) => {
      if (passwordHash !== undefined) {
        const current = await m.query<unknown[]>(
          `SELECT 1 FROM members WHERE id = $1 AND password_hash = $2 FOR SHARE`,
          [session.memberId, passwordHash],
        );
        if (!current.length) return null;
      }
      const saved = await m.getRepository(MemberSession).save(m.getRepository(MemberSession).create(session));
      await m.getRepository(RefreshToken).insert({ ...token, sessionId: saved.id });
      // MAX_SESSIONS_PER_MEMBER: the least recently active live sessions past it end here (deleted with
      // their refresh tokens: a login flood leaves no rows behind), so a member's sessions stay bounded.
      // SKIP LOCKED: a session being refreshed right now (its row locked by the rotation) is left for the
      // next sign-in, instead of the two transactions waiting on each other.
      await m.query(
        `DELETE FROM member_sessions WHERE id IN (
           SELECT id FROM member_sessions WHERE member_id = $1 AND revoked_time IS NULL AND expires_time > now()
            ORDER BY last_active_time DESC, id DESC OFFSET $2 FOR UPDATE SKIP LOCKED)`,
        [saved.memberId, maxSessions],
      );
      return saved;
    });
  }

  findSession(id: string): Promise<MemberSession | null> {
    if (!isUuid(id)) return Promise.resolve(null);
    return this.db.getRepository(MemberSession).findOne({ where: { id } });
  }

  /** One indexed join per authenticated request: is the session live and the member enabled? */
  async liveness(sessionId: string, memberId: string): Promise<SessionLiveness | null> {
    if (!isUuid(sessionId)) return null;
    const rows = await this.db.query<{ revoked: boolean; expired: boolean; status: string; roles: string[] }[]>(
      `SELECT s.revoked_time IS NOT NULL AS revoked, s.expires_time < now() AS expired, m.status, m.roles
         FROM member_sessions s JOIN members m ON m.id = s.member_id
        WHERE s.id = $1 AND s.member_id = $2`,
      [sessionId, memberId],
    );
    if (!rows[0]) return null;
    return { revoked: rows[0].revoked, expired: rows[0].expired, memberStatus: rows[0].status, roles: rows[0].roles };
  }

  /** How the session was authenticated and its last second factor (step-up), or null for a session not live. */
  async factorState(
    sessionId: string,
    memberId: string,
  ): Promise<{ amr: string[]; factorTime: Date | null; factorStrength: number } | null> {
    if (!isUuid(sessionId)) return null;
    const rows = await this.db.query<{ amr: string[]; factorTime: Date | null; factorStrength: number }[]>(
      `SELECT amr, factor_time AS "factorTime", factor_strength AS "factorStrength" FROM member_sessions
        WHERE id = $1 AND member_id = $2 AND revoked_time IS NULL AND expires_time > now()`,
      [sessionId, memberId],
    );
    return rows[0] ?? null;
  }

  /** Records a second factor shown in a live session (step-up): its new amr, strength and time. False when the session is not live. */
  async recordFactor(sessionId: string, memberId: string, amr: string[], strength: number, at: Date): Promise<boolean> {
    if (!isUuid(sessionId)) return false;
    const res = await this.db.query<unknown>(
      `UPDATE member_sessions SET amr = $3, factor_strength = $4, factor_time = $5
        WHERE id = $1 AND member_id = $2 AND revoked_time IS NULL RETURNING id`,
      [sessionId, memberId, amr, strength, at],
    );
    return rowCount(res) > 0;
  }

  /** Updates last activity at most once a minute per session. */
  async touch(sessionId: string): Promise<void> {
    await this.db.query(
      `UPDATE member_sessions SET last_active_time = now() WHERE id = $1 AND last_active_time < now() - interval '60 seconds'`,
      [sessionId],
    );
  }

  listActive(memberId: string): Promise<MemberSession[]> {
    return this.db
      .getRepository(MemberSession)
      .createQueryBuilder('s')
      .where('s.member_id = :memberId AND s.revoked_time IS NULL AND s.expires_time > now()', { memberId })
      .orderBy('s.last_active_time', 'DESC')
      .getMany();
  }

  /** Revokes one live session of a member; false when there is none. */
  async revoke(memberId: string, sessionId: string, reason: string): Promise<boolean> {
    if (!isUuid(sessionId)) return false;
    const res = await this.db.query<unknown>(
      `UPDATE member_sessions SET revoked_time = now(), revoked_reason = $3
        WHERE id = $1 AND member_id = $2 AND revoked_time IS NULL RETURNING id`,
      [sessionId, memberId, reason],
    );
    return rowCount(res) > 0;
  }

  async revokeAll(memberId: string, reason: string, exceptSessionId?: string): Promise<number> {
    const res = await this.db.query<unknown>(
      `UPDATE member_sessions SET revoked_time = now(), revoked_reason = $2
        WHERE member_id = $1 AND revoked_time IS NULL AND ($3::uuid IS NULL OR id <> $3::uuid) RETURNING id`,
      [memberId, reason, exceptSessionId ?? null],
    );
    return rowCount(res);
  }

  findToken(tokenHash: string): Promise<RefreshToken | null> {
    return this.db.getRepository(RefreshToken).findOne({ where: { tokenHash } });
  }

  /**
   * Marks `tokenId` used and inserts its successor in one transaction. The conditional UPDATE takes
   * the row lock, so of N concurrent callers exactly one gets true; the others wait and get false.
   * `now` (the app's Clock) stamps the use and decides expiry, as the reuse grace is measured by it.
   */
  async rotate(
    tokenId: string,
    successorSealed: string,
    successor: Partial<RefreshToken>,
    sessionExpires: Date,
    now: Date,
  ): Promise<boolean> {
    return this.db.transaction(async (m: EntityManager) => {
      const res = await m.query<unknown>(
        `UPDATE member_refresh_tokens SET used_time = $3, successor_sealed = $2
          WHERE id = $1 AND used_time IS NULL AND expires_time > $3 RETURNING session_id`,
        [tokenId, successorSealed, now],
      );
      const claimed = rowsOf<{ session_id: string }>(res)[0];
      if (!claimed) return false;
      await m.getRepository(RefreshToken).insert({ ...successor, sessionId: claimed.session_id });
      // Used tokens are kept to recognise a replay (which ends the session), the newest USED_TOKENS_KEPT of
      // them (by creation, which is the chain's order; used_time comes from the app's Clock): a session refreshed every few seconds for its 30 days does not keep every token it had. An
      // older one replayed is refused as unknown.
      await m.query(
        `DELETE FROM member_refresh_tokens WHERE session_id = $1 AND used_time IS NOT NULL AND id NOT IN (
           SELECT id FROM member_refresh_tokens WHERE session_id = $1 AND used_time IS NOT NULL ORDER BY created_time DESC LIMIT ${USED_TOKENS_KEPT})`,
        [claimed.session_id],
      );
      await m.query(`UPDATE member_sessions SET last_active_time = now(), expires_time = $2 WHERE id = $1`, [
        claimed.session_id,
        sessionExpires,
      ]);
      return true;
    });
  }

  /**
   * Drops dead rows: expired refresh tokens, and sessions that ended (revoked or expired) over a week ago. One
   * statement per table, not cut by DATABASE_STATEMENT_TIMEOUT_MS (a backlog would be cut on every pass).
   */
  async sweep(): Promise<void> {
    await withoutStatementTimeout(this.db, async (m) => {
      await m.query(`DELETE FROM member_refresh_tokens WHERE expires_time < now()`);
      await m.query(
        `DELETE FROM member_sessions WHERE expires_time < now() - interval '7 days' OR revoked_time < now() - interval '7 days'`,
      );
    });
  }
}

function isUuid(v: string): boolean {
  return /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(v);
}

// node-postgres via TypeORM returns [rows, count] for UPDATE ... RETURNING.
function rowsOf<Row = unknown>(res: unknown): Row[] {
  if (Array.isArray(res) && res.length === 2 && Array.isArray(res[0]) && typeof res[1] === 'number')
    return res[0] as Row[];
  return Array.isArray(res) ? (res as Row[]) : [];
}
function rowCount(res: unknown): number {
  return rowsOf(res).length;
}
