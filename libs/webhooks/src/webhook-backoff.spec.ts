import { retryDelayMs } from './webhook-backoff';

describe('retryDelayMs', () => {
  it('doubles from the base with half of it jittered, capped at an hour', () => {
    expect(retryDelayMs(1, 10_000, () => 0)).toBe(5000);
    expect(retryDelayMs(1, 10_000, () => 1)).toBe(10_000);
    expect(retryDelayMs(3, 10_000, () => 0.5)).toBe(30_000);
    expect(retryDelayMs(30, 10_000, () => 1)).toBe(3_600_000);
  });
});
