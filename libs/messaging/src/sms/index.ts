export * from './sms-sender';
export * from './log-sms.sender';
export * from './aliyun-sms.sender';
