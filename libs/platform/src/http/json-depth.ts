import { bodyError } from './body-reader';

/** Largest nesting of arrays and objects a JSON body may have; deeper bodies are refused before parsing. */
export const MAX_JSON_DEPTH = 64;

/**
 * Scans raw JSON for its nesting depth (brackets outside strings) in one pass, so a body nested
 * thousands of levels deep never reaches the parser or the validation pipe (which would overflow the stack).
 */
export function jsonDepthExceeds(buf: Buffer, max = MAX_JSON_DEPTH): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < buf.length; i++) {
    const c = buf[i];
    if (inString) {
      if (c === 0x5c)
        i++; // backslash: skip the escaped byte
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) {
      if (++depth > max) return true;
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
  return false;
}

/** The body reader's `verify` hook: refuses too-deep JSON with a 400. */
export function rejectDeepJson(_req: unknown, _res: unknown, buf: Buffer): void {
  if (jsonDepthExceeds(buf))
    throw bodyError(400, 'entity.too.deep', `JSON nested deeper than ${MAX_JSON_DEPTH} levels`);
}
