/** Injection tokens of the message senders (@app/messaging SmsSender / MailSender), chosen by config. */
export const SMS_SENDER = Symbol('SMS_SENDER');
export const MAIL_SENDER = Symbol('MAIL_SENDER');
