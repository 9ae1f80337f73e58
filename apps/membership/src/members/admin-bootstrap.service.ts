import { Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { MembershipConfig } from '../config/membership.config';
import { Member } from './member.entity';
import { MembersService } from './members.service';

export const ADMIN_ROLE = 'admin';

/**
 * The first admin: a member with the `admin` role, created from ADMIN_ACCOUNT / ADMIN_PASSWORD at boot
 * or by the CLI (`npm run admin:create`). An existing member of that name gets the role; their password
 * is left as it is, so restarting with the variables still set never resets a changed password.
 */
@Injectable()
export class AdminBootstrapService implements OnApplicationBootstrap {
  private readonly logger = new Logger('AdminBootstrap');

  constructor(
    private readonly members: MembersService,
    private readonly config: MembershipConfig,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    if (this.config.ADMIN_ACCOUNT && this.config.ADMIN_PASSWORD) {
      await this.ensureAdmin(this.config.ADMIN_ACCOUNT, this.config.ADMIN_PASSWORD);
    }
  }

  async ensureAdmin(username: string, password: string, opts: { resetPassword?: boolean } = {}): Promise<{ member: Member; created: boolean }> {
    const existing = await this.members.findByAccount(username);
    if (existing) {
      await this.members.addRole(existing.id, ADMIN_ROLE);
      if (opts.resetPassword) await this.members.setPassword(existing.id, password);
      this.logger.log(`admin role ensured for existing member ${existing.id} (${existing.username})`);
      return { member: (await this.members.findById(existing.id))!, created: false };
    }
    try {
      const member = await this.members.create({ username, password, nickname: username, roles: [ADMIN_ROLE] });
      this.logger.log(`admin member ${member.id} (${username}) created`);
      return { member, created: true };
    } catch (err) {
      // Another replica created it at the same moment.
      const again = await this.members.findByAccount(username);
      if (!again) throw err;
      await this.members.addRole(again.id, ADMIN_ROLE);
      return { member: again, created: false };
    }
  }
}
