export * from './openai-media.client';
