import { Logger } from '@nestjs/common';
import { SmsSender } from './sms-sender';

/** Development sender: writes the code to the log. Refused when NODE_ENV=production. */
export class LogSmsSender implements SmsSender {
  readonly name = 'log';
  private readonly logger = new Logger('LogSmsSender');

  constructor(nodeEnv: string | undefined = process.env.NODE_ENV) {
    if (nodeEnv === 'production') {
      throw new Error('The log SMS sender is for development only; configure SMS_PROVIDER=aliyun in production');
    }
  }

  async sendCode(phone: string, code: string, ttlMinutes: number): Promise<void> {
    // Development only: the code must be readable by the developer running the service.
    this.logger.warn(`[dev] SMS to ${phone}: verification code ${code} (valid ${ttlMinutes} min)`);
  }
}
