import { bodyError } from './body-reader';

/** Largest nesting of arrays and objects a JSON body may have; deeper bodies are refused before parsing. */
export const MAX_JSON_DEPTH = 64;

/**
 * Most objects, arrays and object members (`"key": value` pairs) a JSON body may have, all together, unless its
 * route allows more (`@JsonMembersLimit`, route-table.ts). Parsing makes each, and validation walks each
 * (class-transformer builds the DTO a key and an object at a time, class-validator checks it): a 16 MiB body of
 * a million keys, or of five million empty objects, held the gateway's event loop for seconds. No route's
 * ordinary body comes near it (the largest, a settings write of membership's console, has a few hundred;
 * embeddings' 2048 token arrays are 2049 arrays). Scalars in arrays are not counted: a body of them is bounded
 * by its size and by MAX_JSON_ITEMS.
 */
export const MAX_JSON_MEMBERS = 10_000;

/**
 * Most array items and object members a JSON body may have, all together, on every route: counted by the commas
 * outside strings (one per item or member after each array's or object's first). JSON.parse goes through 16 MiB of one-digit numbers (8 million items) in ~260 ms, one
 * turn of the event loop every other call waits for; 2^20 items take ~17 ms (numbers) to ~95 ms (16 MiB of short
 * strings). The largest ordinary bodies stay
 * under it (embeddings' 300 000 tokens of token arrays, a legacy completions prompt of a million token ids); legacy
 * completions' batched token prompts may go past it (their route says so: `@JsonItemsLimit`, route-table.ts).
 */
export const MAX_JSON_ITEMS = 2 ** 20;

/** What a JSON body's scan found past its limits. */
export type JsonShapeExcess = 'depth' | 'members' | 'items' | null;

/**
 * Scans raw JSON in one pass (brackets and colons outside strings) for its nesting depth and its number of
 * objects, arrays and object members (MAX_JSON_MEMBERS), so a body nested thousands of levels deep or of a
 * million keys or objects never reaches the parser or the validation pipe (which would overflow the stack,
 * or walk every one of them).
 */
export function jsonShapeExceeds(
  buf: Buffer,
  maxDepth = MAX_JSON_DEPTH,
  maxMembers = Infinity,
  maxItems = Infinity,
): JsonShapeExcess {
  let depth = 0;
  let members = 0;
  let items = 0;
  let inString = false;
  for (let i = 0; i < buf.length; i++) {
    const c = buf[i];
    if (inString) {
      if (c === 0x5c)
        i++; // backslash: skip the escaped byte
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x3a) {
      // A colon outside a string separates an object member's key from its value: one per member (and a
      // bracket opens an object or array: one each, below).
      if (++members > maxMembers) return 'members';
    } else if (c === 0x7b || c === 0x5b) {
      if (++depth > maxDepth) return 'depth';
      if (++members > maxMembers) return 'members';
    } else if (c === 0x7d || c === 0x5d) depth--;
    else if (c === 0x2c && ++items > maxItems) return 'items';
  }
  return null;
}

/** Whether raw JSON is nested deeper than `max`. */
export function jsonDepthExceeds(buf: Buffer, max = MAX_JSON_DEPTH): boolean {
  return jsonShapeExceeds(buf, max) === 'depth';
}

/** The body reader's `verify` hook: refuses too-deep JSON with a 400. */
export function rejectDeepJson(_req: unknown, _res: unknown, buf: Buffer): void {
  rejectJsonShape(buf, Infinity);
}

/**
 * Refuses JSON nested deeper than MAX_JSON_DEPTH (400 entity.too.deep), with more than `maxMembers` objects,
 * arrays and object members (413 entity.too.many.members), or more than `maxItems` array items and object members
 * (413 entity.too.many.items), before it is parsed.
 */
export function rejectJsonShape(buf: Buffer, maxMembers: number, maxItems = MAX_JSON_ITEMS): void {
  const excess = jsonShapeExceeds(buf, MAX_JSON_DEPTH, maxMembers, maxItems);
  if (excess === 'depth') throw bodyError(400, 'entity.too.deep', `JSON nested deeper than ${MAX_JSON_DEPTH} levels`);
  if (excess === 'members')
    throw bodyError(
      413,
      'entity.too.many.members',
      `Request body has more than ${maxMembers} objects, arrays and object members`,
      {
        limit: maxMembers,
      },
    );
  if (excess === 'items')
    throw bodyError(
      413,
      'entity.too.many.items',
      `Request body has more than ${maxItems} array items and object members`,
      {
        limit: maxItems,
      },
    );
}
