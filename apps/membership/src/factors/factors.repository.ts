import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { AuditLog } from '@app/audit';
import { WebhookOutbox } from '@app/webhooks';
import { FactorChangeRecord, recordFactorChange } from './factor-change';

export interface TotpRow {
  secretSealed: string;
  confirmedTime: Date | null;
  lastStep: number;
  createdTime: Date;
}

export interface PasskeyRow {
  id: string;
  memberId: string;
  credentialId: string;
  publicKey: Buffer;
  signCount: number;
  transports: string[];
  deviceType: 'singleDevice' | 'multiDevice';
  backedUp: boolean;
  name: string;
  createdTime: Date;
  lastUsedTime: Date | null;
}

/** What second factors a member has, read in one query (every sign-in asks). */
export interface FactorSummary {
  totp: boolean;
  totpTime: Date | null;
  passkeys: number;
  recoveryCodes: number;
  recoveryCodesTime: Date | null;
}

const PASSKEY_COLUMNS = `id, member_id AS "memberId", credential_id AS "credentialId", public_key AS "publicKey",
  sign_count::float8 AS "signCount", transports, device_type AS "deviceType", backed_up AS "backedUp", name,
  created_time AS "createdTime", last_used_time AS "lastUsedTime"`;

/**
 * The only place that reads or writes second factors (member_totp, member_recovery_codes, member_passkeys).
 * A member's own change commits with its audit row and member.factor_changed event (factor-change.ts).
 */
@Injectable()
export class FactorsRepository {
  constructor(
    private readonly db: DataSource,
    private readonly audit: AuditLog,
    private readonly outbox: WebhookOutbox,
  ) {}

  async summary(memberId: string): Promise<FactorSummary> {
    const rows = await this.db.query<FactorSummary[]>(
      `SELECT (SELECT confirmed_time FROM member_totp WHERE member_id = $1) AS "totpTime",
              (SELECT count(*)::int FROM member_passkeys WHERE member_id = $1) AS passkeys,
              (SELECT count(*)::int FROM member_recovery_codes WHERE member_id = $1 AND used_time IS NULL) AS "recoveryCodes",
              (SELECT max(created_time) FROM member_recovery_codes WHERE member_id = $1) AS "recoveryCodesTime"`,
      [memberId],
    );
    const r = rows[0];
    return { ...r, totp: r.totpTime != null };
  }

  async totp(memberId: string): Promise<TotpRow | null> {
    const rows = await this.db.query<TotpRow[]>(
      `SELECT secret_sealed AS "secretSealed", confirmed_time AS "confirmedTime", last_step::float8 AS "lastStep", created_time AS "createdTime"
         FROM member_totp WHERE member_id = $1`,
      [memberId],
    );
    return rows[0] ?? null;
  }

  /** Stores a pending (unconfirmed) secret, replacing an earlier pending one; false when one is confirmed. */
  async savePendingTotp(memberId: string, secretSealed: string): Promise<boolean> {
    return this.one(
      `INSERT INTO member_totp (member_id, secret_sealed) VALUES ($1, $2)
       ON CONFLICT (member_id) DO UPDATE SET secret_sealed = EXCLUDED.secret_sealed, created_time = now(), last_step = -1
        WHERE member_totp.confirmed_time IS NULL
       RETURNING 1`,
      [memberId, secretSealed],
    );
  }

  /** Confirms the pending secret checked by the caller (its `sealed` value), using up `step`; false when it changed or is confirmed. */
  async confirmTotp(
    memberId: string,
    secretSealed: string,
    step: number,
    now: Date,
    record: FactorChangeRecord,
  ): Promise<boolean> {
    const rows = await this.recorded(
      `UPDATE member_totp SET confirmed_time = $4, last_step = $3
        WHERE member_id = $1 AND secret_sealed = $2 AND confirmed_time IS NULL RETURNING 1`,
      [memberId, secretSealed, step, now],
      () => record,
    );
    return rows.length > 0;
  }

  /**
   * Uses time step `step` of the confirmed secret: one conditional UPDATE, so of any number of
   * concurrent requests on any replica at most one gets true, and never for a step at or before one
   * already used.
   */
  async useTotpStep(memberId: string, step: number): Promise<boolean> {
    return this.one(
      `UPDATE member_totp SET last_step = $2 WHERE member_id = $1 AND confirmed_time IS NOT NULL AND last_step < $2 RETURNING 1`,
      [memberId, step],
    );
  }

  async deleteTotp(memberId: string, record: FactorChangeRecord): Promise<boolean> {
    return (
      (
        await this.recorded(
          `DELETE FROM member_totp WHERE member_id = $1 AND confirmed_time IS NOT NULL RETURNING 1`,
          [memberId],
          () => record,
        )
      ).length > 0
    );
  }

  /** Replaces every recovery code of the member with these hashes; `record` when the member asked for new ones. */
  async replaceRecoveryCodes(memberId: string, hashes: string[], record?: FactorChangeRecord): Promise<void> {
    await this.db.transaction(async (m) => {
      await m.query(`DELETE FROM member_recovery_codes WHERE member_id = $1`, [memberId]);
      await m.query(`INSERT INTO member_recovery_codes (member_id, code_hash) SELECT $1, unnest($2::varchar[])`, [
        memberId,
        hashes,
      ]);
      if (record) await recordFactorChange(m, record, this.audit, this.outbox);
    });
  }

  /** Uses one unused code with this hash; the codes left after it, or null when none matched. */
  async useRecoveryCode(memberId: string, hash: string, now: Date): Promise<number | null> {
    const rows = await this.db.query<{ left: number }[]>(
      `WITH used AS (
         UPDATE member_recovery_codes SET used_time = $3
          WHERE id = (SELECT id FROM member_recovery_codes WHERE member_id = $1 AND code_hash = $2 AND used_time IS NULL LIMIT 1 FOR UPDATE SKIP LOCKED)
            AND used_time IS NULL
         RETURNING id)
       SELECT (SELECT count(*)::int FROM member_recovery_codes WHERE member_id = $1 AND used_time IS NULL) - 1 AS left FROM used`,
      [memberId, hash, now],
    );
    return rows[0] ? rows[0].left : null;
  }

  async deleteRecoveryCodes(memberId: string): Promise<void> {
    await this.db.query(`DELETE FROM member_recovery_codes WHERE member_id = $1`, [memberId]);
  }

  listPasskeys(memberId: string): Promise<PasskeyRow[]> {
    return this.db.query<PasskeyRow[]>(
      `SELECT ${PASSKEY_COLUMNS} FROM member_passkeys WHERE member_id = $1 ORDER BY created_time, id`,
      [memberId],
    );
  }

  async passkeyByCredentialId(credentialId: string): Promise<PasskeyRow | null> {
    const rows = await this.db.query<PasskeyRow[]>(
      `SELECT ${PASSKEY_COLUMNS} FROM member_passkeys WHERE credential_id = $1`,
      [credentialId],
    );
    return rows[0] ?? null;
  }

  /**
   * Stores a verified passkey unless the member already keeps `max` ('full') or the credential is already
   * registered, to anyone (null). One member's registrations are counted and inserted one at a time (a lock on the member for the
   * transaction), so concurrent ones cannot pass `max` together.
   */
  async insertPasskey(
    p: Omit<PasskeyRow, 'id' | 'createdTime' | 'lastUsedTime'>,
    record: FactorChangeRecord,
    max: number,
  ): Promise<PasskeyRow | 'full' | null> {
    return this.db.transaction(async (m) => {
      await m.query(`SELECT pg_advisory_xact_lock(hashtextextended('member_passkeys:' || $1::text, 0))`, [p.memberId]);
      const [{ n }] = rowsOf<{ n: number }>(
        await m.query(`SELECT count(*)::int AS n FROM member_passkeys WHERE member_id = $1`, [p.memberId]),
      );
      if (n >= max) return 'full';
      const rows = rowsOf<PasskeyRow>(
        await m.query(
          `INSERT INTO member_passkeys (member_id, credential_id, public_key, sign_count, transports, device_type, backed_up, name)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (credential_id) DO NOTHING RETURNING ${PASSKEY_COLUMNS}`,
          [p.memberId, p.credentialId, p.publicKey, p.signCount, p.transports, p.deviceType, p.backedUp, p.name],
        ),
      );
      if (rows.length)
        await recordFactorChange(
          m,
          { ...record, passkey: { id: rows[0].id, name: rows[0].name } },
          this.audit,
          this.outbox,
        );
      return rows[0] ?? null;
    });
  }

  /**
   * Records a verified use: the new sign count only while the stored one is still the one checked, so
   * two concurrent assertions with the same count (a cloned authenticator) cannot both pass.
   */
  async recordPasskeyUse(
    id: string,
    checkedCount: number,
    newCount: number,
    backedUp: boolean,
    now: Date,
  ): Promise<boolean> {
    return this.one(
      `UPDATE member_passkeys SET sign_count = $3, backed_up = $4, last_used_time = $5
        WHERE id = $1 AND sign_count = $2 RETURNING 1`,
      [id, checkedCount, newCount, backedUp, now],
    );
  }

  async renamePasskey(memberId: string, id: string, name: string): Promise<PasskeyRow | null> {
    if (!isUuid(id)) return null;
    const rows = await this.db.query<unknown>(
      `UPDATE member_passkeys SET name = $3 WHERE id = $1 AND member_id = $2 RETURNING ${PASSKEY_COLUMNS}`,
      [id, memberId, name],
    );
    return rowsOf<PasskeyRow>(rows)[0] ?? null;
  }

  /** Deletes one passkey of the member; its name, or null when there is none. */
  async deletePasskey(memberId: string, id: string, record: FactorChangeRecord): Promise<string | null> {
    if (!isUuid(id)) return null;
    const rows = await this.recorded<{ name: string }>(
      `DELETE FROM member_passkeys WHERE id = $1 AND member_id = $2 RETURNING name`,
      [id, memberId],
      (row) => ({
        ...record,
        passkey: { id, name: row.name },
      }),
    );
    return rows[0]?.name ?? null;
  }

  /** Runs one change; when it touched a row, records it (audit row, event) in the same transaction. */
  private recorded<Row = unknown>(
    sql: string,
    params: unknown[],
    record: (row: Row) => FactorChangeRecord,
  ): Promise<Row[]> {
    return this.db.transaction(async (m) => {
      const rows = rowsOf<Row>(await m.query(sql, params));
      if (rows.length) await recordFactorChange(m, record(rows[0]), this.audit, this.outbox);
      return rows;
    });
  }

  private async one(sql: string, params: unknown[]): Promise<boolean> {
    return rowsOf(await this.db.query<unknown>(sql, params)).length > 0;
  }
}

function isUuid(v: string): boolean {
  return /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(v);
}

// node-postgres via TypeORM returns [rows, count] for UPDATE/DELETE ... RETURNING (sessions/sessions.repository.ts).
function rowsOf<Row = unknown>(res: unknown): Row[] {
  if (Array.isArray(res) && res.length === 2 && Array.isArray(res[0]) && typeof res[1] === 'number')
    return res[0] as Row[];
  return Array.isArray(res) ? (res as Row[]) : [];
}
