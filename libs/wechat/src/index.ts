export * from './wechat-api.client';
export * from './wechat-message.crypto';
