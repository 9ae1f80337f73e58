import { endianness } from 'os';

/**
 * An embedding vector as the gateway holds it between the upstream's answer and the caller's:
 * - numbers (an upstream that answered JSON numbers, a local engine, the cache);
 * - float32 values decoded from base64 (a Float32Array over the decoded bytes);
 * - a base64 vector kept as the bytes of the upstream's answer (Base64Vector), written to a base64 answer as
 *   they came.
 * Thousands of 1536-dimension vectors held as arrays of numbers are tens of MB of young objects, copied by
 * every collection of the garbage collector while the call runs; these forms keep them outside the JS heap.
 */
export type EmbeddingVector = number[] | Float32Array | Base64Vector;

const LITTLE_ENDIAN = endianness() === 'LE';
/** From this many bytes Buffer.from gives a result memory of its own, not a slice of the shared pool. */
const OWN_MEMORY_BYTES = Buffer.poolSize >>> 1;
const EQUALS = 0x3d;

/**
 * Each character's value in base64's alphabet, plus one (0: not in it). Not base64url's `-` and `_`, which
 * Buffer.from would also take, nor any character above 0x7f (Buffer.from reads only a character's low byte).
 */
const VALUE = new Uint8Array(256);
[...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'].forEach(
  (c, i) => (VALUE[c.charCodeAt(0)] = i + 1),
);
/** 1 where both bytes of a 16-bit value are in the alphabet (either byte order): two characters a lookup. */
const PAIRS = new Uint8Array(65536);
for (let a = 0; a < 256; a++) for (let b = 0; b < 256; b++) PAIRS[a | (b << 8)] = VALUE[a] && VALUE[b] ? 1 : 0;

/**
 * Whether bytes [from, to) of `text` are all in the alphabet: four at a time where they are aligned (one 32-bit
 * read, two PAIRS lookups), three times as fast as a byte at a time; this check was a quarter of the event loop's
 * busy time while a key's 17 MB answers went through (docs/operations/performance.md).
 */
function inAlphabet(text: Uint8Array, from: number, to: number): boolean {
  let i = from;
  while (i < to && ((text.byteOffset + i) & 3) !== 0) if (VALUE[text[i++]] === 0) return false;
  const words = (to - i) >>> 2;
  if (words > 0) {
    const w = new Uint32Array(text.buffer, text.byteOffset + i, words);
    for (let k = 0; k < words; k++) if ((PAIRS[w[k] & 0xffff] & PAIRS[w[k] >>> 16]) === 0) return false;
    i += words * 4;
  }
  while (i < to) if (VALUE[text[i++]] === 0) return false;
  return true;
}

/**
 * The length in bytes of what `text` (base64 characters, one byte each) decodes to, or -1 when it is not
 * base64 as every encoder writes it: characters of the alphabet only, whole groups of four, padded with at
 * most two `=` at its end, and the padded group's unused bits zero (otherwise two texts decode to the same bytes,
 * and strict decoders refuse the one with bits set).
 */
function decodedLength(text: Uint8Array): number {
  const n = text.length;
  if (n === 0 || n % 4 !== 0) return -1;
  const padding = text[n - 1] === EQUALS ? (text[n - 2] === EQUALS ? 2 : 1) : 0;
  if (!inAlphabet(text, 0, n - padding)) return -1;
  if (padding > 0 && ((VALUE[text[n - 1 - padding]] - 1) & (padding === 2 ? 0x0f : 0x03)) !== 0) return -1;
  return (n / 4) * 3 - padding;
}

/** Little-endian float32 bytes as float32 values: a view of them where they have memory of their own, else a copy. */
function floatsOf(bytes: Buffer): Float32Array {
  const n = bytes.length / 4;
  if (LITTLE_ENDIAN && bytes.length >= OWN_MEMORY_BYTES && bytes.byteOffset % 4 === 0)
    return new Float32Array(bytes.buffer, bytes.byteOffset, n);
  const out = new Float32Array(n);
  if (LITTLE_ENDIAN) new Uint8Array(out.buffer).set(bytes);
  else for (let i = 0; i < n; i++) out[i] = bytes.readFloatLE(i * 4);
  return out;
}

/**
 * A base64 embedding (little-endian float32s, OpenAI's encoding_format=base64) kept as the bytes it was read
 * from: checked to be base64 of whole float32 values, decoded only when numbers are asked for.
 */
export class Base64Vector {
  private constructor(
    /** The base64 text, one byte per character (a view of the answer it was read from). */
    readonly text: Buffer,
    /** Its number of float32 values. */
    readonly length: number,
  ) {}

  /**
   * The vector whose base64 text is `text`, or undefined when it is not base64 of one or more whole float32 values
   * as an encoder writes them (decodedLength: a vector with unused bits set is not kept as it came).
   */
  static of(text: Buffer): Base64Vector | undefined {
    const bytes = decodedLength(text);
    return bytes > 0 && bytes % 4 === 0 ? new Base64Vector(text, bytes / 4) : undefined;
  }

  /**
   * A vector whose text was checked already, as `of` checks it (by the embeddings worker: vector-worker.ts), of
   * `length` float32 values.
   */
  static checked(text: Buffer, length: number): Base64Vector {
    return new Base64Vector(text, length);
  }

  floats(): Float32Array {
    return floatsOf(Buffer.from(this.text.toString('latin1'), 'base64'));
  }

  /** The base64 text. */
  toString(): string {
    return this.text.toString('latin1');
  }
}

/**
 * A base64 embedding given as a string, as float32 values; undefined when it is not base64, or 'partial' when it
 * does not decode to whole float32 values.
 */
export function float32sOf(base64: string): Float32Array | 'partial' | undefined {
  // Buffer.from skips what is not base64, and takes base64url's - and _ and any character's low byte: a string
  // of base64's characters only, padded at most twice at its end, is decoded; any other is refused. (Unused bits
  // set in the padded group are taken, as before: the caller is answered the vector encoded anew.)
  const n = base64.length;
  if (n === 0 || n % 4 !== 0) return undefined;
  const padding = base64.endsWith('==') ? 2 : base64.endsWith('=') ? 1 : 0;
  for (let i = 0; i < n - padding; i++) {
    const c = base64.charCodeAt(i);
    if (c > 0x7f || VALUE[c] === 0) return undefined;
  }
  const bytes = Buffer.from(base64, 'base64');
  return bytes.length % 4 === 0 ? floatsOf(bytes) : 'partial';
}

export function isEmbeddingVector(v: unknown): v is EmbeddingVector {
  return Array.isArray(v) || v instanceof Float32Array || v instanceof Base64Vector;
}

/** The vector as JSON numbers (float32 values as the numbers they are). */
export function vectorNumbers(v: EmbeddingVector): number[] {
  if (Array.isArray(v)) return v;
  return Array.from(v instanceof Base64Vector ? v.floats() : v);
}

/** The vector as OpenAI's encoding_format=base64 sends it: little-endian float32s, base64. */
export function vectorBase64(v: EmbeddingVector): string {
  if (v instanceof Base64Vector) return v.toString();
  const floats = v instanceof Float32Array ? v : Float32Array.from(v);
  if (LITTLE_ENDIAN) return Buffer.from(floats.buffer, floats.byteOffset, floats.byteLength).toString('base64');
  const buf = Buffer.alloc(floats.length * 4);
  for (let i = 0; i < floats.length; i++) buf.writeFloatLE(floats[i], i * 4);
  return buf.toString('base64');
}
