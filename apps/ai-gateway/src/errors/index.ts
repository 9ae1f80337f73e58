export * from './gateway-errors';
export * from './openai-error';
export * from './openai-validation.pipe';
