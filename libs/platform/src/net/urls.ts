/** `s` without its trailing slashes (a loop, not `/\/+$/`: linear on any input, see regex-safety.spec.ts). */
export function withoutTrailingSlashes(s: string): string {
  let end = s.length;
  while (end > 0 && s[end - 1] === '/') end--;
  return s.slice(0, end);
}
