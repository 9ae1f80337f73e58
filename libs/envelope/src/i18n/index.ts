export * from './localize';
export type { MessageKey } from './messages.en';
