/** Injection tokens of the message senders (libs/providers SmsSender / MailSender), chosen by config. */
export const SMS_SENDER = Symbol('SMS_SENDER');
export const MAIL_SENDER = Symbol('MAIL_SENDER');
