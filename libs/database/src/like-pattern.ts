/**
 * An ILIKE pattern matching rows that contain `text` as typed: its `%`, `_` and `\` match themselves
 * (use with `ESCAPE '\'`).
 */
export function containsPattern(text: string): string {
  return `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}
