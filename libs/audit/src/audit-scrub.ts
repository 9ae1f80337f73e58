/**
 * Field names that hold secrets or their hashes (API keys' `key`/`key_hash`, webhook secrets, password
 * hashes, sealed TOTP secrets, refresh tokens, recovery codes): dropped from `before`/`after` at any
 * depth, so a caller that passes a whole record cannot leak one into the audit log.
 */
const SECRET_FIELD = /(^key$|hash$|secret|password|sealed|^token$|refresh_?token|recovery_?codes?|^code$)/i;

export function scrubSecrets(value: unknown, depth = 0): unknown {
  if (value === null || value === undefined) return null;
  if (value instanceof Date) return value.toISOString();
  if (depth > 8 || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map((v) => scrubSecrets(v, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    if (SECRET_FIELD.test(k) || v === undefined) continue;
    out[k] = scrubSecrets(v, depth + 1);
  }
  return out;
}
