import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { AuditContext, AuditLog } from '@app/audit';
import { OPERATOR_ROLES } from '@app/auth';
import { WebhookOutbox } from '@app/webhooks';

export interface MemberRow {
  id: string;
  username: string;
  nickname: string | null;
  email: string | null;
  phone: string | null;
  emailVerified: boolean;
  phoneVerified: boolean;
  avatarUrl: string | null;
  status: string;
  roles: string[];
  memberLevel: number;
  points: number;
  createdTime: Date;
  lastLoginTime: Date | null;
}

export interface SessionRow {
  id: string;
  loginType: string;
  deviceName: string | null;
  ip: string | null;
  amr: string[];
  createdTime: Date;
  lastActiveTime: Date;
  expiresTime: Date;
}

export interface IdentityRow {
  id: string;
  provider: string;
  registrationId: string;
  nickname: string | null;
  avatarUrl: string | null;
  createdTime: Date;
  lastLoginTime: Date | null;
}

export interface FactorsRow {
  totpTime: Date | null;
  recoveryCodes: number;
  passkeys: { id: string; name: string; backedUp: boolean; createdTime: Date; lastUsedTime: Date | null }[];
}

const MEMBER_COLUMNS = `id::text AS id, username, nickname, email, phone, email_verified_time IS NOT NULL AS "emailVerified",
  phone_verified_time IS NOT NULL AS "phoneVerified", avatar_url AS "avatarUrl", status, roles, member_level AS "memberLevel",
  points, created_time AS "createdTime", last_login_time AS "lastLoginTime"`;

/**
 * Members counted past the end of a page, at most: a page's `total` reads at most offset + limit + this many rows
 * (an index-only walk of the newest ones), whatever the table's size; a list longer than that says so with
 * `totalCapped` and the count it reached, which moves on as the reader pages.
 */
export const COUNT_AHEAD = 1000;

/** LIKE wildcards in a search term are literal. */
const likePrefix = (q: string) => `${q.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

/**
 * Every query of the members admin API (/api/v1/admin/members). Each change commits with its audit-log
 * row and webhook event in one transaction (libs/audit, libs/webhooks); a member row is locked FOR UPDATE
 * first so two admins acting at once are recorded in the order they took effect.
 */
@Injectable()
export class AdminMembersRepository {
  constructor(
    private readonly db: DataSource,
    private readonly audit: AuditLog,
    private readonly outbox: WebhookOutbox,
  ) {}

  /**
   * Newest first; `q` matches the start of username, email, phone or nickname (indexed: migration 1796400000000), or
   * an exact id. `total` counts at most offset + limit + COUNT_AHEAD matches (`capped`: there may be more), so no
   * page counts the whole table.
   */
  async search(
    q: string | undefined,
    offset: number,
    limit: number,
  ): Promise<{ items: MemberRow[]; total: number; capped: boolean }> {
    const where = q
      ? `WHERE lower(username) LIKE $1 OR lower(email) LIKE $1 OR phone LIKE $1 OR lower(nickname) LIKE $1${/^\d{1,19}$/.test(q) ? ' OR id = $2::bigint' : ''}`
      : '';
    const params: unknown[] = q ? [likePrefix(q), ...(/^\d{1,19}$/.test(q) ? [q] : [])] : [];
    const countUpTo = offset + limit + COUNT_AHEAD;
    const [items, count] = await Promise.all([
      this.db.query<MemberRow[]>(
        `SELECT ${MEMBER_COLUMNS} FROM members ${where} ORDER BY id DESC OFFSET ${offset} LIMIT ${limit}`,
        params,
      ),
      this.db.query<{ total: number }[]>(
        `SELECT count(*)::int AS total FROM (SELECT 1 FROM members ${where} LIMIT ${countUpTo}) counted`,
        params,
      ),
    ]);
    return { items, total: count[0].total, capped: count[0].total >= countUpTo };
  }

  async member(id: string): Promise<MemberRow | null> {
    if (!/^\d{1,19}$/.test(id)) return null;
    const rows = await this.db.query<MemberRow[]>(`SELECT ${MEMBER_COLUMNS} FROM members WHERE id = $1`, [id]);
    return rows[0] ?? null;
  }

  sessions(memberId: string): Promise<SessionRow[]> {
    return this.db.query<SessionRow[]>(
      `SELECT id, login_type AS "loginType", device_name AS "deviceName", ip, amr, created_time AS "createdTime",
              last_active_time AS "lastActiveTime", expires_time AS "expiresTime"
         FROM member_sessions WHERE member_id = $1 AND revoked_time IS NULL AND expires_time > now()
        ORDER BY last_active_time DESC`,
      [memberId],
    );
  }

  identities(memberId: string): Promise<IdentityRow[]> {
    return this.db.query<IdentityRow[]>(
      `SELECT id, provider, registration_id AS "registrationId", nickname, avatar_url AS "avatarUrl", created_time AS "createdTime", last_login_time AS "lastLoginTime"
         FROM member_identities WHERE member_id = $1 ORDER BY created_time`,
      [memberId],
    );
  }

  async factors(memberId: string): Promise<FactorsRow> {
    const [summary, passkeys] = await Promise.all([
      this.db.query<{ totpTime: Date | null; recoveryCodes: number }[]>(
        `SELECT (SELECT confirmed_time FROM member_totp WHERE member_id = $1) AS "totpTime",
                (SELECT count(*)::int FROM member_recovery_codes WHERE member_id = $1 AND used_time IS NULL) AS "recoveryCodes"`,
        [memberId],
      ),
      this.db.query<FactorsRow['passkeys']>(
        `SELECT id, name, backed_up AS "backedUp", created_time AS "createdTime", last_used_time AS "lastUsedTime"
           FROM member_passkeys WHERE member_id = $1 ORDER BY created_time`,
        [memberId],
      ),
    ]);
    return { ...summary[0], passkeys };
  }

  /** Disables (ending every session) or enables; null for an unknown member, false when it already had that status. */
  setStatus(memberId: string, status: 'active' | 'disabled', ctx: AuditContext, at: Date): Promise<boolean | null> {
    return this.db.transaction(async (m) => {
      const before = await this.lock(m, memberId);
      if (!before) return null;
      if (before.status === status) return false;
      await m.query(`UPDATE members SET status = $2, updated_time = now() WHERE id = $1`, [memberId, status]);
      const ended = status === 'disabled' ? await this.endSessions(m, memberId, 'member_disabled') : 0;
      await this.audit.record(m, {
        ...ctx,
        action: status === 'disabled' ? 'member.disabled' : 'member.enabled',
        target: { type: 'member', id: memberId },
        before: { status: before.status },
        after: { status, ...(status === 'disabled' ? { sessionsEnded: ended } : {}) },
      });
      if (status === 'disabled')
        await this.outbox.enqueue(m, 'member.disabled', {
          member_id: memberId,
          disabled_at: at.toISOString(),
          by: ctx.actor,
        });
      return true;
    });
  }

  /** Ends one live session; false when the member has no such live session. */
  revokeSession(memberId: string, sessionId: string, ctx: AuditContext): Promise<boolean> {
    if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(sessionId))
      return Promise.resolve(false);
    return this.db.transaction(async (m) => {
      const rows = await m.query<{ id: string }[]>(
        `UPDATE member_sessions SET revoked_time = now(), revoked_reason = 'admin'
          WHERE id = $1 AND member_id = $2 AND revoked_time IS NULL AND expires_time > now() RETURNING id`,
        [sessionId, memberId],
      );
      if (!rowsOf(rows).length) return false;
      await this.audit.record(m, {
        ...ctx,
        action: 'session.revoked',
        target: { type: 'session', id: sessionId },
        after: { memberId },
      });
      return true;
    });
  }

  /** Ends every live session of the member; the number ended, or null for an unknown member. */
  revokeAllSessions(memberId: string, ctx: AuditContext): Promise<number | null> {
    return this.db.transaction(async (m) => {
      if (!(await this.lock(m, memberId))) return null;
      const ended = await this.endSessions(m, memberId, 'admin');
      await this.audit.record(m, {
        ...ctx,
        action: 'member.sessions_revoked',
        target: { type: 'member', id: memberId },
        after: { sessionsEnded: ended },
      });
      return ended;
    });
  }

  /** Removes the authenticator app, passkeys and recovery codes, and ends the member's sessions; what was removed, or null for an unknown member. */
  resetFactors(
    memberId: string,
    ctx: AuditContext,
  ): Promise<{ totp: boolean; passkeys: number; recoveryCodes: number } | null> {
    return this.db.transaction(async (m) => {
      if (!(await this.lock(m, memberId))) return null;
      const totp = rowsOf(
        await m.query(`DELETE FROM member_totp WHERE member_id = $1 RETURNING confirmed_time`, [memberId]),
      );
      const passkeys = rowsOf(
        await m.query(`DELETE FROM member_passkeys WHERE member_id = $1 RETURNING id`, [memberId]),
      ).length;
      const recoveryCodes = rowsOf(
        await m.query(`DELETE FROM member_recovery_codes WHERE member_id = $1 AND used_time IS NULL RETURNING id`, [
          memberId,
        ]),
      ).length;
      await m.query(`DELETE FROM member_recovery_codes WHERE member_id = $1`, [memberId]);
      const removed = {
        totp: totp.some((r) => (r as { confirmed_time: Date | null }).confirmed_time !== null),
        passkeys,
        recoveryCodes,
      };
      const ended = await this.endSessions(m, memberId, 'factor_changed');
      // Counts only; named so the audit scrubber (libs/audit/src/audit-scrub.ts drops *recovery_codes*) keeps them.
      const before = { totp: removed.totp, passkeys: removed.passkeys, unusedBackupCodes: removed.recoveryCodes };
      await this.audit.record(m, {
        ...ctx,
        action: 'member.factors_reset',
        target: { type: 'member', id: memberId },
        before,
        after: { sessionsEnded: ended },
      });
      await this.outbox.enqueue(m, 'member.factor_changed', { member_id: memberId, change: 'reset', by: ctx.actor });
      return removed;
    });
  }

  /** Sets the operator role (admin, viewer or none), keeping other roles; the roles before and after, or null for an unknown member. */
  setRole(
    memberId: string,
    role: string | null,
    ctx: AuditContext,
  ): Promise<{ before: string[]; after: string[] } | null> {
    return this.db.transaction(async (m) => {
      const current = await this.lock(m, memberId);
      if (!current) return null;
      const after = [...current.roles.filter((r) => !OPERATOR_ROLES.includes(r)), ...(role ? [role] : [])];
      if (after.join() === current.roles.join()) return { before: current.roles, after };
      await m.query(`UPDATE members SET roles = $2::text[], updated_time = now() WHERE id = $1`, [memberId, after]);
      await this.audit.record(m, {
        ...ctx,
        action: 'member.role_changed',
        target: { type: 'member', id: memberId },
        before: { roles: current.roles },
        after: { roles: after },
      });
      return { before: current.roles, after };
    });
  }

  private async lock(m: EntityManager, memberId: string): Promise<{ status: string; roles: string[] } | null> {
    if (!/^\d{1,19}$/.test(memberId)) return null;
    const rows = await m.query<{ status: string; roles: string[] }[]>(
      `SELECT status, roles FROM members WHERE id = $1 FOR UPDATE`,
      [memberId],
    );
    return rows[0] ?? null;
  }

  private async endSessions(m: EntityManager, memberId: string, reason: string): Promise<number> {
    const res: unknown = await m.query(
      `UPDATE member_sessions SET revoked_time = now(), revoked_reason = $2 WHERE member_id = $1 AND revoked_time IS NULL RETURNING id`,
      [memberId, reason],
    );
    return rowsOf(res).length;
  }
}

// node-postgres via TypeORM returns [rows, count] for UPDATE/DELETE ... RETURNING.
function rowsOf(res: unknown): unknown[] {
  if (Array.isArray(res) && res.length === 2 && Array.isArray(res[0]) && typeof res[1] === 'number')
    return res[0] as unknown[];
  return Array.isArray(res) ? (res as unknown[]) : [];
}
