const MAX_DELAY_MS = 60 * 60_000;

/**
 * The wait before attempt `attempts + 1` after `attempts` failed ones: base * 2^(attempts-1), at most an
 * hour, with "equal jitter" (half fixed, half random) so endpoints coming back are not hit by every
 * delivery at once while the order of retries is kept.
 */
export function retryDelayMs(attempts: number, baseMs: number, random: () => number = Math.random): number {
  const full = Math.min(MAX_DELAY_MS, baseMs * 2 ** Math.max(0, attempts - 1));
  return Math.round(full / 2 + random() * (full / 2));
}
