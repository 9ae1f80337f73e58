import { Logger } from '@nestjs/common';
import { MailContent, MailSender } from './mail-sender';

/** Development sender: writes the code to the log. Refused when NODE_ENV=production. */
export class LogMailSender implements MailSender {
  readonly name = 'log';
  private readonly logger = new Logger('LogMailSender');

  constructor(nodeEnv: string | undefined = process.env.NODE_ENV) {
    if (nodeEnv === 'production') {
      throw new Error('The log mail sender is for development only; configure SMTP_HOST in production');
    }
  }

  async sendCode(email: string, code: string, ttlMinutes: number): Promise<void> {
    this.logger.warn(`[dev] mail to ${email}: verification code ${code} (valid ${ttlMinutes} min)`);
  }

  async send(email: string, mail: MailContent): Promise<void> {
    this.logger.warn(`[dev] mail to ${email}: ${mail.subject}: ${mail.text}`);
  }
}
