import { Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { AuditContext, systemContext } from '@app/audit';
import { MembershipConfig } from '../config/membership.config';
import { SessionsService } from '../sessions/sessions.service';
import { Member } from './member.entity';
import { MembersService } from './members.service';

export const ADMIN_ROLE = 'admin';

/** The name asked for belongs to a member without the admin role: never promoted by name. */
export class AdminAccountTakenError extends Error {
  constructor(
    readonly account: string,
    readonly memberId: string,
  ) {
    super(
      `refusing to make "${account}" an admin: it is already the account of member ${memberId}, who is not an admin ` +
        `(anyone can register a name first, and promoting it would hand them the admin role). Choose another username for the admin.`,
    );
    this.name = 'AdminAccountTakenError';
  }
}

/**
 * The first admin: a member with the `admin` role, created from ADMIN_ACCOUNT / ADMIN_PASSWORD at boot
 * or by the CLI (`npm run admin:create`). A member who already has that name is accepted only if they
 * are an admin already (restarts: their password is left as it is, so a changed password is never
 * reset); a non-admin member of that name is never promoted, since whoever registered it first would
 * become admin with their own password and logins.
 */
@Injectable()
export class AdminBootstrapService implements OnApplicationBootstrap {
  private readonly logger = new Logger('AdminBootstrap');

  constructor(
    private readonly members: MembersService,
    private readonly config: MembershipConfig,
    private readonly sessions: SessionsService,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    if (!this.config.ADMIN_ACCOUNT || !this.config.ADMIN_PASSWORD) return;
    try {
      await this.ensureAdmin(this.config.ADMIN_ACCOUNT, this.config.ADMIN_PASSWORD, { ctx: systemContext() });
    } catch (err) {
      // Not fatal: a stranger who took the name must not be able to keep the service from starting.
      if (err instanceof AdminAccountTakenError) this.logger.error(`ADMIN_ACCOUNT not bootstrapped: ${err.message}`);
      else throw err;
    }
  }

  /**
   * What the operator must know about signing in as this admin: with MFA_REQUIRED_ROLES naming the
   * admin role (the default), the first sign-in asks to enrol an authenticator app or a passkey before
   * any token is issued (factors/, auth/login.service.ts). Null when admins are not required a factor.
   */
  secondFactorNote(): string | null {
    const required = this.config.MFA_REQUIRED_ROLES.split(',').map((r) => r.trim());
    if (!required.includes(ADMIN_ROLE)) return null;
    return (
      'admins must use a second factor (MFA_REQUIRED_ROLES): the first sign-in answers {mfaRequired, enrolmentRequired: true, mfaToken} ' +
      'instead of tokens; enrol an authenticator app or a passkey on the account page ({base_url}/account/) or through ' +
      'POST /api/v1/app/auth/mfa/enrol/*, and keep the recovery codes it shows'
    );
  }

  /**
   * Creates the admin `username`, or accepts an existing admin of that name (`resetPassword` then sets
   * its password and ends its sessions, as a member's own reset does: an operator resets a password
   * because it may be known to someone else, who may be logged in with it). `revokedSessions` counts
   * them. Throws AdminAccountTakenError when the name belongs to a member who is not an admin. A creation
   * (`member.admin_created`) and a reset (`member.password_reset`) are recorded in the audit log as made
   * by `opts.ctx`: the system at boot (ADMIN_ACCOUNT), the operating-system user for the CLI (admin.cli.ts).
   */
  async ensureAdmin(
    username: string,
    password: string,
    opts: { resetPassword?: boolean; ctx: AuditContext },
  ): Promise<{ member: Member; created: boolean; revokedSessions: number }> {
    const existing = await this.members.findByAccount(username);
    if (existing) return this.existingAdmin(username, existing, password, opts);
    try {
      const member = await this.members.create(
        { username, password, nickname: username, roles: [ADMIN_ROLE] },
        { method: 'admin_bootstrap', audit: { ctx: opts.ctx, action: 'member.admin_created' } },
      );
      this.logger.log(`admin member ${member.id} (${username}) created`);
      const note = this.secondFactorNote();
      if (note) this.logger.log(note);
      return { member, created: true, revokedSessions: 0 };
    } catch (err) {
      // Someone took the name at the same moment: another replica creating the admin, or a sign-up.
      const again = await this.members.findByAccount(username);
      if (!again) throw err;
      return this.existingAdmin(username, again, password, opts);
    }
  }

  private async existingAdmin(
    account: string,
    member: Member,
    password: string,
    opts: { resetPassword?: boolean; ctx: AuditContext },
  ): Promise<{ member: Member; created: boolean; revokedSessions: number }> {
    if (!member.roles?.includes(ADMIN_ROLE)) throw new AdminAccountTakenError(account, member.id);
    let revokedSessions = 0;
    if (opts.resetPassword) {
      await this.members.resetPassword(member.id, password, opts.ctx);
      revokedSessions = await this.sessions.revokeAll(member.id, 'password_reset');
      this.logger.log(`admin ${member.id} (${member.username}): password reset, ${revokedSessions} session(s) ended`);
    }
    return { member: (await this.members.findById(member.id))!, created: false, revokedSessions };
  }
}
