import { OpenAiError } from '@app/envelope';
import { EngineFailedError, EngineInputError, EngineUnavailableError } from '@app/providers/engines';
import { toMediaError } from './media-errors';

describe('toMediaError', () => {
  const statusOf = (e: unknown) => (toMediaError(e, 'image') as OpenAiError).getStatus();

  it('maps engine errors to 4xx/503, never 500', () => {
    expect(statusOf(new EngineInputError('unsupported image format'))).toBe(415);
    expect(statusOf(new EngineInputError('image too large'))).toBe(400);
    expect(statusOf(new EngineUnavailableError('ocr', 'model missing'))).toBe(503);
    const failed = toMediaError(new EngineFailedError('ocr', 'out of memory'), 'image') as OpenAiError;
    expect(failed.getStatus()).toBe(503);
    expect(failed.getResponse()).toMatchObject({ errorCode: 'engine_failed', retryAfterSeconds: 2 });
  });
});
