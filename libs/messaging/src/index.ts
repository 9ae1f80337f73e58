// Outgoing messages to people: SMS (Aliyun or the log) and mail (SMTP or the log).
export * from './sms';
export * from './mail';
