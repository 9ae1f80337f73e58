import { Inject, Injectable, Logger, Optional } from '@nestjs/common';
import { Locale, MessageKey, MessageParams, translate } from '@app/envelope';
import type { MailSender } from '@app/messaging';
import { Member } from '../members/member.entity';
import { SessionsService } from '../sessions/sessions.service';
import { SiteConfigService } from '../site-config/site-config.service';
import { MAIL_SENDER } from '../verification/verification.tokens';

export type FactorNotice =
  | 'notice.totpEnabled'
  | 'notice.totpDisabled'
  | 'notice.passkeyAdded'
  | 'notice.passkeyRemoved'
  | 'notice.recoveryCodesRegenerated'
  | 'notice.recoveryCodeUsed';

/**
 * What follows every change of a member's factors: the member's other sessions end (a thief signed
 * in elsewhere loses the session) and the member is told by mail at a proven address, in their
 * language, naming the site as its settings do. Text messages carry only the vendor's approved
 * verification template (libs/messaging/src/sms), so notices go by mail.
 */
@Injectable()
export class FactorNotices {
  private readonly logger = new Logger('FactorNotices');

  constructor(
    private readonly sessions: SessionsService,
    private readonly site: SiteConfigService,
    @Optional() @Inject(MAIL_SENDER) private readonly mail: MailSender | null,
  ) {}

  /** Ends the member's sessions but `keepSessionId`, then announces the change (a failed mail is logged, the change stands). */
  async factorChanged(
    member: Member,
    notice: FactorNotice,
    locale: Locale,
    keepSessionId: string | undefined,
    params: MessageParams = {},
  ): Promise<void> {
    await this.sessions.revokeAll(member.id, 'factor_changed', keepSessionId);
    await this.announce(member, notice, locale, params);
  }

  async announce(member: Member, notice: FactorNotice, locale: Locale, params: MessageParams = {}): Promise<void> {
    if (!this.mail || !member.email || !member.emailVerifiedTime) return;
    const site = await this.site.siteName();
    const words = (key: MessageKey) => translate(locale, key, { ...params, site });
    try {
      await this.mail.send(member.email, { subject: words('notice.subject'), text: words(notice) });
    } catch (err) {
      this.logger.warn(`notice ${notice} to member ${member.id} not sent: ${(err as Error).message}`);
    }
  }
}
