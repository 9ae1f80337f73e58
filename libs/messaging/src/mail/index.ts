export * from './mail-sender';
export * from './log-mail.sender';
export * from './smtp-mail.sender';
export { MessageSendError } from '../sms/sms-sender';
