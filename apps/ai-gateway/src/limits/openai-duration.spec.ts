import { openAiDuration } from './openai-duration';

describe('openAiDuration (x-ratelimit-reset-* format)', () => {
  it('writes Go-style durations as OpenAI does', () => {
    expect(openAiDuration(12)).toBe('12ms');
    expect(openAiDuration(1000)).toBe('1s');
    expect(openAiDuration(17_500)).toBe('17.5s');
    expect(openAiDuration(60_000)).toBe('1m0s');
    expect(openAiDuration(360_000)).toBe('6m0s');
    expect(openAiDuration(60_500)).toBe('1m0.5s');
    expect(openAiDuration(-5)).toBe('0ms');
  });
});
