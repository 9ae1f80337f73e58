// Conservative fast checks for the hot request bodies: `true` only for bodies the class-validator DTO
// accepts too (a subset of them: plain common fields, no nulls); anything else returns false and goes
// through the validation pipe, which gives the real answer and its error messages. Lengths are checked
// in UTF-16 units, which is never less than the code-point count class-validator uses.
// test: apps/ai-gateway/src/http/quick-checks.spec.ts compares each with its route's full validation on generated bodies.

export type Check = (v: unknown) => boolean;

export const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);
export const num =
  (min: number, max: number): Check =>
  (v) =>
    typeof v === 'number' && Number.isFinite(v) && v >= min && v <= max;
export const int =
  (min: number, max: number): Check =>
  (v) =>
    typeof v === 'number' && Number.isInteger(v) && v >= min && v <= max;
export const bool: Check = (v) => typeof v === 'boolean';
export const str =
  (min: number, max: number): Check =>
  (v) =>
    typeof v === 'string' && v.length >= min && v.length <= max;

/** Every own key of `o` has a check and passes it; required keys are present. */
export function fields(
  o: Record<string, unknown>,
  checks: Record<string, Check>,
  required: readonly string[],
): boolean {
  for (const k of required) if (!(k in o)) return false;
  for (const k in o) {
    const check = checks[k];
    if (check === undefined || !Object.prototype.hasOwnProperty.call(checks, k) || !check(o[k])) return false;
  }
  return true;
}
