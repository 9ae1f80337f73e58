import { Logger, Module } from '@nestjs/common';
import { LogMailSender, MailSender, SmtpMailSender } from '@app/messaging';
import { AliyunSmsSender, LogSmsSender, SmsSender } from '@app/messaging';
import { MembershipConfig } from '../config/membership.config';
import { SecurityModule } from '../security/security.module';
import { SiteConfigModule } from '../site-config/site-config.module';
import { setPhonePattern } from './phone-format';
import { VerificationCodesRepository } from './verification-codes.repository';
import { VerificationService } from './verification.service';
import { MAIL_SENDER, SMS_SENDER } from './verification.tokens';

export function smsSenderFor(config: MembershipConfig): SmsSender {
  if (config.SMS_PROVIDER === 'aliyun') {
    return new AliyunSmsSender({
      accessKeyId: config.ALIYUN_SMS_ACCESS_KEY_ID!,
      accessKeySecret: config.ALIYUN_SMS_ACCESS_KEY_SECRET!,
      signName: config.ALIYUN_SMS_SIGN_NAME!,
      templateCode: config.ALIYUN_SMS_TEMPLATE_CODE!,
      endpoint: config.ALIYUN_SMS_ENDPOINT,
    });
  }
  return new LogSmsSender(config.NODE_ENV);
}

/** SMTP when SMTP_HOST is set; otherwise the log sender outside production and no email codes in production. */
export function mailSenderFor(config: MembershipConfig): MailSender | null {
  if (config.SMTP_HOST) {
    return new SmtpMailSender({
      host: config.SMTP_HOST,
      port: config.SMTP_PORT,
      secure: config.SMTP_SECURE,
      requireTls: config.SMTP_REQUIRE_TLS,
      user: config.SMTP_USER,
      password: config.SMTP_PASSWORD,
      from: config.SMTP_FROM,
    });
  }
  if (config.isProduction) {
    new Logger('Verification').warn(
      'SMTP_HOST is not set: email codes are disabled (the log sender is refused in production)',
    );
    return null;
  }
  return new LogMailSender(config.NODE_ENV);
}

@Module({
  imports: [SecurityModule, SiteConfigModule],
  providers: [
    VerificationCodesRepository,
    VerificationService,
    {
      provide: SMS_SENDER,
      inject: [MembershipConfig],
      useFactory: (config: MembershipConfig) => {
        setPhonePattern(config.PHONE_PATTERN);
        return smsSenderFor(config);
      },
    },
    { provide: MAIL_SENDER, inject: [MembershipConfig], useFactory: mailSenderFor },
  ],
  exports: [VerificationService, MAIL_SENDER, SMS_SENDER],
})
export class VerificationModule {}
