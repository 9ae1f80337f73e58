import { readFileSync } from 'fs';

/** The tiktoken rank files shipped by js-tiktoken: `{ pat_str, special_tokens, bpe_ranks }`. */
interface RankFile {
  pat_str: string;
  special_tokens: Record<string, number>;
  bpe_ranks: string;
}

function readRankFile(encoding: string): RankFile {
  // Parsed as JSON, not required: a required module keeps its (large) source and exports alive.
  const text = readFileSync(require.resolve(`js-tiktoken/ranks/${encoding}`), 'utf8');
  const start = text.indexOf('{');
  const end = text.lastIndexOf('}');
  if (start < 0 || end < start) throw new Error(`js-tiktoken/ranks/${encoding}: unexpected format`);
  return JSON.parse(text.slice(start, end + 1)) as RankFile;
}

const EMPTY = -1;

/**
 * Writes `text[start .. end)` as UTF-8 into `out` (at least 3 bytes per UTF-16 unit) and returns the bytes
 * written: what TextEncoder.encodeInto writes for that substring (a lone surrogate as U+FFFD), without the
 * substring.
 */
export function utf8Into(text: string, start: number, end: number, out: Uint8Array): number {
  let n = 0;
  for (let i = start; i < end; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) out[n++] = c;
    else if (c < 0x800) {
      out[n++] = 0xc0 | (c >> 6);
      out[n++] = 0x80 | (c & 0x3f);
    } else if (c >= 0xd800 && c <= 0xdfff) {
      const d = i + 1 < end ? text.charCodeAt(i + 1) : 0;
      if (c <= 0xdbff && d >= 0xdc00 && d <= 0xdfff) {
        const cp = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00);
        out[n++] = 0xf0 | (cp >> 18);
        out[n++] = 0x80 | ((cp >> 12) & 0x3f);
        out[n++] = 0x80 | ((cp >> 6) & 0x3f);
        out[n++] = 0x80 | (cp & 0x3f);
        i++;
      } else {
        out[n++] = 0xef; // U+FFFD for a lone surrogate
        out[n++] = 0xbf;
        out[n++] = 0xbd;
      }
    } else {
      out[n++] = 0xe0 | (c >> 12);
      out[n++] = 0x80 | ((c >> 6) & 0x3f);
      out[n++] = 0x80 | (c & 0x3f);
    }
  }
  return n;
}

/**
 * Longest pre-tokenizer piece merged as one, in UTF-16 units. Byte-pair merging is quadratic in a
 * piece's length (tiktoken's Rust core switches to a heap for pieces of 100+ bytes; js-tiktoken has no
 * bound at all), so longer pieces are merged in slices of this length: the work per input byte stays
 * bounded (at most 3 * MAX_PIECE pair scans) and each cut adds at most one token to the count.
 * Tokenizer (tokenizer.ts) cuts runs of one character class well below this first.
 */
export const MAX_PIECE = 256;
/** Pieces of this many bytes or more are merged with a heap (mergedPartsHeap). */
const HEAP_FROM = 48;
/** Heap keys are rank * KEY_SHIFT + start: exact in a double (ranks < 2^31, starts < 2^21). */
const KEY_SHIFT = 2 ** 21;

/**
 * Counts tokens of one tiktoken encoding exactly as js-tiktoken's `encode(text, 'all').length`, with
 * the rank table as a few typed arrays instead of js-tiktoken's two Maps of 100-200k entries keyed by
 * "104,101,..." strings (many times the heap, plus its bundled tables of every encoding).
 */
export class BpeCounter {
  /** Bytes of every token, back to back; entry i is bytes[offsets[i] .. offsets[i + 1]). */
  private readonly bytes: Uint8Array;
  private readonly offsets: Uint32Array;
  private readonly ranks: Int32Array;
  /** Open addressing on the FNV-1a hash of a token's bytes: entry index, or EMPTY. */
  private readonly slots: Int32Array;
  private readonly mask: number;
  private readonly pattern: RegExp;
  /** The pattern, sticky: matches only where its lastIndex is (countOrdinary). */
  private readonly sticky: RegExp;
  private readonly special: RegExp | null;
  /** Special tokens by id (`<|endoftext|>` ...). */
  private readonly specialById = new Map<number, string>();
  /** Entry of each rank (EMPTY for gaps), built on the first decode: counting never needs it. */
  private entryOfRank: Int32Array | null = null;
  /** Ids 0 .. vocabularySize - 1 may exist: the highest rank or special token id, plus one. */
  readonly vocabularySize: number;
  private readonly encoder = new TextEncoder();
  private scratch = new Uint8Array(1024);
  /** Per-part work arrays of the merge, grown on demand. */
  private starts = new Int32Array(256);
  private pairRanks = new Float64Array(256);
  private ends = new Int32Array(0);
  private prevs = new Int32Array(0);
  private heapPairRanks = new Float64Array(0);
  private heap = new Float64Array(0);
  private heapSize = 0;
  /**
   * Work units done so far: one per input byte of a piece plus one per pair examined while merging.
   * Only read by tests, to check that counting stays linear in the input's length.
   */
  work = 0;

  static load(encoding: string): BpeCounter {
    return new BpeCounter(readRankFile(encoding));
  }

  constructor(file: RankFile) {
    // Decoded in one pass over the text into preallocated arrays: a string or Buffer per token
    // (100-200k of them) would leave V8's heap grown by their garbage after boot.
    const text = file.bpe_ranks;
    let fields = 1;
    for (let i = text.indexOf(' '); i >= 0; i = text.indexOf(' ', i + 1)) fields++;
    const bytes = new Uint8Array(Math.ceil((text.length * 3) / 4));
    const offsets = new Uint32Array(fields + 1);
    const ranks = new Int32Array(fields);
    let entries = 0;
    let size = 0;
    // Lines: "<first token> <rank of the first token> <token> <token> ...", tokens in base64.
    for (let line = 0; line < text.length;) {
      let end = text.indexOf('\n', line);
      if (end < 0) end = text.length;
      const first = text.indexOf(' ', line);
      if (first > line && first < end) {
        let at = text.indexOf(' ', first + 1);
        if (at < 0 || at > end) at = end;
        let rank = Number.parseInt(text.slice(first + 1, at), 10);
        while (at < end) {
          let stop = text.indexOf(' ', at + 1);
          if (stop < 0 || stop > end) stop = end;
          offsets[entries] = size;
          ranks[entries++] = rank++;
          size = decodeBase64(text, at + 1, stop, bytes, size);
          at = stop;
        }
      }
      line = end + 1;
    }
    offsets[entries] = size;
    this.bytes = bytes.slice(0, size);
    this.offsets = offsets.slice(0, entries + 1);
    this.ranks = ranks.slice(0, entries);
    const count = entries;
    let capacity = 1;
    while (capacity < count * 2) capacity *= 2;
    this.slots = new Int32Array(capacity).fill(EMPTY);
    this.mask = capacity - 1;
    for (let i = 0; i < count; i++) this.insert(i);
    // js-tiktoken counts a one-byte piece as one token even without a rank, and drops rankless parts
    // of longer pieces: with every single byte ranked (true of the tiktoken tables) both are "1 per part".
    const one = new Uint8Array(1);
    for (let b = 0; b < 256; b++) {
      one[0] = b;
      if (this.rank(one, 0, 1) === EMPTY) throw new Error(`BPE table without a rank for byte ${b}`);
    }
    this.pattern = new RegExp(file.pat_str, 'gu');
    this.sticky = new RegExp(file.pat_str, 'uy');
    let top = entries ? this.ranks.reduce((m, r) => Math.max(m, r), 0) : -1;
    for (const [text, id] of Object.entries(file.special_tokens)) {
      this.specialById.set(id, text);
      top = Math.max(top, id);
    }
    this.vocabularySize = top + 1;
    const specials = Object.keys(file.special_tokens);
    this.special = specials.length
      ? new RegExp(specials.map((s) => s.replace(/[\\^$*+?.()|[\]{}]/g, '\\$&')).join('|'), 'g')
      : null;
  }

  /** Number of tokens of `text`, special tokens (e.g. `<|endoftext|>`) counted as one token each. */
  count(text: string): number {
    let total = 0;
    let start = 0;
    if (this.special) {
      const special = this.special;
      for (;;) {
        special.lastIndex = start;
        const m = special.exec(text);
        if (!m) break;
        total += this.countOrdinary(text.substring(start, m.index)) + 1;
        start = m.index + m[0].length;
      }
    }
    return total + this.countOrdinary(start === 0 ? text : text.substring(start));
  }

  /** Whether `id` names a token of this encoding (a rank of the table or a special token). */
  has(id: number): boolean {
    return (
      Number.isInteger(id) &&
      id >= 0 &&
      id < this.vocabularySize &&
      (this.specialById.has(id) || this.entryOf(id) !== EMPTY)
    );
  }

  /**
   * The bytes the token ids stand for, joined (special tokens as their text), or undefined when an id
   * is not a token of this encoding. UTF-8 validity is the caller's to check (a token may be half a character).
   */
  decodeBytes(ids: readonly number[]): Uint8Array | undefined {
    const chunks: Uint8Array[] = [];
    let size = 0;
    for (const id of ids) {
      const special = this.specialById.get(id);
      let chunk: Uint8Array;
      if (special !== undefined) chunk = this.encoder.encode(special);
      else {
        const e = Number.isInteger(id) && id >= 0 && id < this.vocabularySize ? this.entryOf(id) : EMPTY;
        if (e === EMPTY) return undefined;
        chunk = this.bytes.subarray(this.offsets[e], this.offsets[e + 1]);
      }
      chunks.push(chunk);
      size += chunk.length;
    }
    const out = new Uint8Array(size);
    let at = 0;
    for (const c of chunks) {
      out.set(c, at);
      at += c.length;
    }
    return out;
  }

  private entryOf(rank: number): number {
    if (!this.entryOfRank) {
      const table = new Int32Array(this.vocabularySize).fill(EMPTY);
      for (let e = 0; e < this.ranks.length; e++) table[this.ranks[e]] = e;
      this.entryOfRank = table;
    }
    return rank < this.entryOfRank.length ? this.entryOfRank[rank] : EMPTY;
  }

  /**
   * Tokens of `text` without special tokens. The pre-tokenizer's pieces are found with a sticky copy of the
   * pattern's `test` (the match's end is its lastIndex), and each piece is encoded to UTF-8 from `text` itself:
   * no match array and no string per piece. `exec` made both for every few characters, and they were most of
   * what counting an embeddings batch allocated (each a young-generation collection sooner for every call of the
   * process: bench/suites/noisy-neighbour.js).
   */
  private countOrdinary(text: string): number {
    const sticky = this.sticky;
    let total = 0;
    for (let at = 0; at < text.length;) {
      sticky.lastIndex = at;
      let start = at;
      if (!sticky.test(text)) {
        // No piece starts here (none of the tiktoken patterns leaves a character out; kept exact regardless):
        // the next match, as the global pattern's exec finds it.
        const pattern = this.pattern;
        pattern.lastIndex = at;
        const m = pattern.exec(text);
        if (!m) break;
        start = m.index;
        sticky.lastIndex = start + m[0].length;
      }
      const end = sticky.lastIndex;
      if (end === start) {
        // As String.prototype.matchAll does: step over the empty match by one code point.
        const c = text.codePointAt(start);
        at = start + (c !== undefined && c > 0xffff ? 2 : 1);
        continue;
      }
      if (end - start <= MAX_PIECE) total += this.countPiece(text, start, end);
      else {
        for (let from = start; from < end;) {
          let to = Math.min(from + MAX_PIECE, end);
          const c = text.charCodeAt(to - 1);
          if (to < end && c >= 0xd800 && c <= 0xdbff) to--; // never split a surrogate pair
          total += this.countPiece(text, from, to);
          from = to;
        }
      }
      at = end;
    }
    return total;
  }

  /** Tokens of the piece `text[start .. end)`. */
  private countPiece(text: string, start: number, end: number): number {
    if (this.scratch.length < (end - start) * 3) this.scratch = new Uint8Array((end - start) * 3);
    const n = utf8Into(text, start, end, this.scratch);
    this.work += n;
    return this.rank(this.scratch, 0, n) !== EMPTY ? 1 : this.mergedParts(this.scratch, n);
  }

  /**
   * Parts left by byte-pair merging `buf[0..n)`: repeatedly merge the adjacent pair whose joined bytes
   * have the lowest rank (leftmost on ties) until no joined pair has a rank (tiktoken's algorithm).
   */
  private mergedParts(buf: Uint8Array, n: number): number {
    if (n === 1) return 1;
    if (n >= HEAP_FROM) return this.mergedPartsHeap(buf, n);
    if (this.starts.length < n + 1) {
      this.starts = new Int32Array(n + 1);
      this.pairRanks = new Float64Array(n + 1);
    }
    const starts = this.starts;
    const pairRanks = this.pairRanks;
    // parts are buf[starts[i] .. starts[i + 1]); pairRanks[i] is the rank of parts i and i + 1 joined.
    let parts = n;
    for (let i = 0; i <= n; i++) starts[i] = i;
    for (let i = 0; i < n - 1; i++) pairRanks[i] = this.rankOr(buf, i, i + 2);
    pairRanks[n - 1] = Infinity;
    while (parts > 1) {
      this.work += parts;
      let min = Infinity;
      let at = -1;
      for (let i = 0; i < parts - 1; i++) {
        if (pairRanks[i] < min) {
          min = pairRanks[i];
          at = i;
        }
      }
      if (at < 0) break;
      // Join parts at and at + 1: drop boundary at + 1.
      starts.copyWithin(at + 1, at + 2, parts + 1);
      pairRanks.copyWithin(at + 1, at + 2, parts);
      parts--;
      pairRanks[at] = at + 1 < parts ? this.rankOr(buf, starts[at], starts[at + 2]) : Infinity;
      if (at > 0) pairRanks[at - 1] = this.rankOr(buf, starts[at - 1], starts[at + 1]);
    }
    return parts;
  }

  /**
   * The same merge with a binary heap of candidate pairs keyed by (rank, start), stale entries skipped
   * when popped: O(n log n) instead of O(n^2) for longer pieces (tiktoken's Rust core does the same from
   * 100 bytes). Same result: the lowest rank, leftmost on ties, is always merged first.
   */
  private mergedPartsHeap(buf: Uint8Array, n: number): number {
    if (this.ends.length < n + 1) {
      this.ends = new Int32Array(n + 1);
      this.prevs = new Int32Array(n + 1);
      this.heapPairRanks = new Float64Array(n + 1);
      this.heap = new Float64Array(3 * n + 3);
    }
    const ends = this.ends; // ends[s]: end of the part starting at s
    const prevs = this.prevs; // prevs[s]: start of the part before the one starting at s
    const pairRanks = this.heapPairRanks; // rank of the part at s joined with the next one; Infinity if none (or s is no longer a start)
    this.heapSize = 0;
    for (let i = 0; i < n; i++) {
      ends[i] = i + 1;
      prevs[i] = i - 1;
      pairRanks[i] = i + 2 <= n ? this.rankOr(buf, i, i + 2) : Infinity;
      if (pairRanks[i] !== Infinity) this.heapPush(pairRanks[i], i);
    }
    let parts = n;
    while (this.heapSize > 0) {
      const key = this.heapPop();
      const start = key % KEY_SHIFT;
      const rank = (key - start) / KEY_SHIFT;
      if (pairRanks[start] !== rank) continue; // stale: the pair changed since it was pushed
      const right = ends[start];
      const end = ends[right];
      ends[start] = end;
      if (end < n) prevs[end] = start;
      pairRanks[right] = Infinity;
      parts--;
      pairRanks[start] = end < n ? this.rankOr(buf, start, ends[end]) : Infinity;
      if (pairRanks[start] !== Infinity) this.heapPush(pairRanks[start], start);
      if (start > 0) {
        const before = prevs[start];
        pairRanks[before] = this.rankOr(buf, before, end);
        if (pairRanks[before] !== Infinity) this.heapPush(pairRanks[before], before);
      }
    }
    return parts;
  }

  private heapPush(rank: number, start: number): void {
    const heap = this.heap;
    let i = this.heapSize++;
    const key = rank * KEY_SHIFT + start;
    let work = 1;
    while (i > 0) {
      work++;
      const parent = (i - 1) >> 1;
      if (heap[parent] <= key) break;
      heap[i] = heap[parent];
      i = parent;
    }
    heap[i] = key;
    this.work += work;
  }

  private heapPop(): number {
    const heap = this.heap;
    const top = heap[0];
    const size = --this.heapSize;
    const last = heap[size];
    let i = 0;
    let work = 1;
    for (;;) {
      work++;
      let child = 2 * i + 1;
      if (child >= size) break;
      if (child + 1 < size && heap[child + 1] < heap[child]) child++;
      if (heap[child] >= last) break;
      heap[i] = heap[child];
      i = child;
    }
    heap[i] = last;
    this.work += work;
    return top;
  }

  private rankOr(buf: Uint8Array, from: number, to: number): number {
    const r = this.rank(buf, from, to);
    return r === EMPTY ? Infinity : r;
  }

  /** Rank of the byte string `buf[from..to)`, or EMPTY. */
  private rank(buf: Uint8Array, from: number, to: number): number {
    const { slots, offsets, bytes, mask } = this;
    const len = to - from;
    for (let s = hash(buf, from, to) & mask; ; s = (s + 1) & mask) {
      const e = slots[s];
      if (e === EMPTY) return EMPTY;
      const o = offsets[e];
      if (offsets[e + 1] - o !== len) continue;
      let k = 0;
      while (k < len && bytes[o + k] === buf[from + k]) k++;
      if (k === len) return this.ranks[e];
    }
  }

  /** Adds entry e; a byte string listed twice keeps its last rank (as js-tiktoken's object does). */
  private insert(e: number): void {
    const { slots, offsets, bytes, mask } = this;
    const from = offsets[e];
    const len = offsets[e + 1] - from;
    for (let s = hash(bytes, from, from + len) & mask; ; s = (s + 1) & mask) {
      const other = slots[s];
      if (other === EMPTY) {
        slots[s] = e;
        return;
      }
      const o = offsets[other];
      if (offsets[other + 1] - o !== len) continue;
      let k = 0;
      while (k < len && bytes[o + k] === bytes[from + k]) k++;
      if (k === len) {
        slots[s] = e;
        return;
      }
    }
  }
}

const BASE64 = new Int8Array(128).fill(-1);
for (let i = 0; i < 64; i++)
  BASE64['ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'.charCodeAt(i)] = i;

/** Decodes base64 `text[from..to)` into `out` at `at`; returns the end position. */
function decodeBase64(text: string, from: number, to: number, out: Uint8Array, at: number): number {
  let bits = 0;
  let n = 0;
  for (let i = from; i < to; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x3d) break; // '=' padding
    const v = c < 128 ? BASE64[c] : -1;
    if (v < 0) throw new Error(`BPE table: bad base64 at ${i}`);
    bits = ((bits << 6) | v) & 0xffffff;
    n += 6;
    if (n >= 8) {
      n -= 8;
      out[at++] = (bits >> n) & 0xff;
    }
  }
  return at;
}

function hash(buf: Uint8Array, from: number, to: number): number {
  let h = 0x811c9dc5;
  for (let i = from; i < to; i++) h = Math.imul(h ^ buf[i], 0x01000193);
  return h >>> 0;
}
