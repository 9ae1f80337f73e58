/**
 * A duration as OpenAI writes `x-ratelimit-reset-*` (Go's duration format): `20ms`, `1s`, `6m0s`,
 * `1m0.5s`. Milliseconds are the finest unit.
 */
export function openAiDuration(ms: number): string {
  const total = Math.max(0, Math.ceil(ms));
  if (total < 1000) return `${total}ms`;
  const minutes = Math.floor(total / 60_000);
  const seconds = (total - minutes * 60_000) / 1000;
  const s = `${Number(seconds.toFixed(3))}s`;
  return minutes > 0 ? `${minutes}m${s}` : s;
}
