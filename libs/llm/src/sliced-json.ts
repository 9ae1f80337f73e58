/**
 * A large JSON answer parsed a run of items at a time: an OpenAI embeddings answer of 2048 vectors is 17 MB
 * (base64) to 65 MB (floats) of JSON, 140 to 500 ms of one JSON.parse during which the event loop answers
 * no other call. Here the object's members are found by a scan of the bytes, and the items of its array
 * member (`data`) are parsed one at a time by JSON.parse, with `pace` charged for the bytes of each: the
 * caller's turns (FairTurns, LoopHeadroom) fall between items. What is parsed is checked by JSON.parse
 * itself; the scan only finds where values end, in one pass (linear in the bytes, every step advances).
 */

/** What a bulk step charges its work to: undefined while no turn is due, else the turn to wait for. */
export interface BulkPace {
  charge(units: number): Promise<void> | undefined;
  /** The time since the last turn was not work (e.g. waiting for the network): not reported as bulk work's. */
  idle?(): void;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const COMMA = 0x2c;
const COLON = 0x3a;

/**
 * Bytes per unit charged to the pace where bytes are copied or scanned (joined pieces, a raw member's bytes): some
 * 16 times faster than a BPE count goes through characters.
 */
const BYTES_PER_UNIT = 16;
/**
 * Bytes per unit charged for what JSON.parse parses: numbers are most of an embeddings answer, and JSON.parse goes
 * through a float vector's bytes ~5.5 ns each: 3 bytes a unit make slices of ~0.4 ms, a BPE count's ~0.3 ms (measured on the
 * answers of bench/lib/upstream.js: 16 bytes a unit made slices of 1.6 ms).
 */
const PARSED_BYTES_PER_UNIT = 3;
/**
 * Units charged per item of the array besides its bytes: finding its end, its string and JSON.parse call, its
 * object and `item` cost ~1.3 us whatever its size (about 64 units of a BPE count). Charged by bytes alone, an
 * answer of 2048 small vectors (150 KB) was one slice of 2.7 ms, holding every other call that long.
 */
const ITEM_UNITS = 64;

/**
 * Charges `pace` for bytes handled, BYTES_PER_UNIT to a unit, the remainder carried to the next call: the turn
 * to wait for when one is due, else undefined (a promise only at turns, as Pace.charge).
 */
export function byteCharger(pace: BulkPace): (bytes: number) => Promise<void> | undefined {
  let owed = 0;
  return (bytes) => {
    owed += bytes;
    if (owed < BYTES_PER_UNIT) return undefined;
    const due = pace.charge(Math.floor(owed / BYTES_PER_UNIT));
    owed %= BYTES_PER_UNIT;
    return due;
  };
}

const isSpace = (b: number) => b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09;

/** Sets a member as JSON.parse does: "__proto__" is an own member, not the prototype; a repeated one, the last wins. */
function setMember(out: Record<string, unknown>, name: string, value: unknown): void {
  Object.defineProperty(out, name, { value, enumerable: true, writable: true, configurable: true });
}

/**
 * The pieces of a body as one Buffer, copied a few hundred KB at a time with `pace` charged for each: one
 * Buffer.concat of 17 MB held the event loop ~100 ms on a machine whose fresh pages are slow to touch.
 */
export async function joinSliced(pieces: readonly Buffer[], size: number, pace: BulkPace): Promise<Buffer> {
  if (pieces.length === 1) return pieces[0];
  const out = Buffer.allocUnsafe(size);
  const charge = byteCharger(pace);
  let at = 0;
  for (const piece of pieces) {
    at += piece.copy(out, at);
    const due = charge(piece.length);
    if (due) await due;
  }
  if (at !== size) throw new SyntaxError(`body of ${at} bytes, not ${size}`);
  return out;
}

/**
 * A read position in a body received in pieces (as the socket gave them), never joined: finds where each value
 * ends across pieces, and gives one value's bytes as a view of its piece (a copy only for a value that spans
 * two or more). Linear in the bytes: every step moves forward.
 */
class PieceCursor {
  /** Index of the current piece, and the position in it (at < its length unless at the end of the body). */
  p = 0;
  at = 0;
  /** Bytes of the pieces before the current one (for error positions). */
  private base = 0;

  constructor(private readonly pieces: readonly Buffer[]) {
    this.normalize();
  }

  fail(what: string): never {
    throw new SyntaxError(`${what} at byte ${this.base + this.at}`);
  }

  /** Past the end of a piece: the start of the next non-empty one (or the end of the body). */
  private normalize(): void {
    while (this.p < this.pieces.length && this.at >= this.pieces[this.p].length) {
      this.base += this.pieces[this.p].length;
      this.at -= this.pieces[this.p].length;
      this.p++;
    }
  }

  /** The byte at the position, or -1 at the end of the body. */
  byte(): number {
    return this.p < this.pieces.length ? this.pieces[this.p][this.at] : -1;
  }

  atEnd(): boolean {
    return this.p >= this.pieces.length;
  }

  step(): void {
    this.at++;
    this.normalize();
  }

  skipSpace(): void {
    while (this.p < this.pieces.length) {
      const b = this.pieces[this.p];
      let i = this.at;
      while (i < b.length && isSpace(b[i])) i++;
      this.at = i;
      if (i < b.length) return;
      this.normalize();
    }
  }

  expect(byte: number): void {
    this.skipSpace();
    if (this.byte() !== byte) this.fail(`expected '${String.fromCharCode(byte)}'`);
    this.step();
  }

  /** After a member or item: true at the `close` byte that ends its object or array, false at a comma. */
  closes(close: number): boolean {
    this.skipSpace();
    const c = this.byte();
    if (c !== close && c !== COMMA) this.fail(`expected ',' or '${String.fromCharCode(close)}'`);
    this.step();
    return c === close;
  }

  /** Bytes of the last member name read (memberName), its quotes included. */
  nameBytes = 0;
  /** Where the last value (value()) started and ended: piece and offset each, the end before moving to a next piece. */
  private startP = 0;
  private startAt = 0;
  private endP = 0;
  private endAt = 0;

  /**
   * From the opening quote at the position: moves past the closing quote (one after an even run of backslashes,
   * the run counted across pieces too), its end kept as the last value's.
   */
  private stringEnd(): void {
    let slashes = 0; // backslashes just before the current search start, counted from earlier pieces
    let from = this.at + 1;
    while (this.p < this.pieces.length) {
      const b = this.pieces[this.p];
      const q = b.indexOf(QUOTE, from);
      if (q < 0) {
        // No quote in the rest of this piece: carry the backslashes it ends with.
        let run = 0;
        while (b.length - 1 - run >= from && b[b.length - 1 - run] === BACKSLASH) run++;
        slashes = run === b.length - from ? slashes + run : run;
        this.at = b.length;
        this.normalize();
        from = this.at;
        continue;
      }
      let run = 0;
      while (q - 1 - run >= from && b[q - 1 - run] === BACKSLASH) run++;
      if (q - run === from) run += slashes;
      slashes = 0;
      if (run % 2 === 0) {
        this.endP = this.p;
        this.endAt = q + 1;
        this.at = q + 1;
        this.normalize();
        return;
      }
      from = q + 1;
    }
    this.fail('unterminated string');
  }

  /**
   * Moves past the value at the position (after spaces): a string, an object or array (nested, with strings), a
   * scalar; valueBytes() then gives its bytes. No allocation: a position is two numbers.
   */
  value(): void {
    this.skipSpace();
    if (this.atEnd()) this.fail('expected a value');
    this.startP = this.p;
    this.startAt = this.at;
    const first = this.byte();
    if (first === QUOTE) return this.stringEnd();
    if (first !== OPEN_OBJECT && first !== OPEN_ARRAY) {
      while (this.p < this.pieces.length) {
        const b = this.pieces[this.p];
        let i = this.at;
        while (i < b.length && b[i] !== COMMA && b[i] !== CLOSE_OBJECT && b[i] !== CLOSE_ARRAY && !isSpace(b[i])) i++;
        this.endP = this.p;
        this.endAt = i;
        this.at = i;
        if (i < b.length) break;
        this.normalize();
      }
      if (this.endP === this.startP && this.endAt === this.startAt) this.fail('expected a value');
      this.normalize();
      return;
    }
    let depth = 0;
    while (this.p < this.pieces.length) {
      const b = this.pieces[this.p];
      let i = this.at;
      let quoted = false;
      while (i < b.length) {
        const c = b[i];
        if (c === QUOTE) {
          quoted = true;
          break;
        }
        if (c === OPEN_OBJECT || c === OPEN_ARRAY) depth++;
        else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
          depth--;
          if (depth === 0) {
            this.endP = this.p;
            this.endAt = i + 1;
            this.at = i + 1;
            this.normalize();
            return;
          }
        }
        i++;
      }
      this.at = i;
      if (quoted) this.stringEnd();
      else this.normalize();
    }
    this.fail('unterminated value');
  }

  /** Whether the last value spans pieces (valueBytes copies it). */
  spans(): boolean {
    return this.startP !== this.endP;
  }

  /** The last value's bytes: a view of its piece, or a copy of the parts of the pieces it spans. */
  valueBytes(): Buffer {
    if (this.startP === this.endP) return this.pieces[this.startP].subarray(this.startAt, this.endAt);
    const parts = [this.pieces[this.startP].subarray(this.startAt)];
    for (let p = this.startP + 1; p < this.endP; p++) parts.push(this.pieces[p]);
    parts.push(this.pieces[this.endP].subarray(0, this.endAt));
    return Buffer.concat(parts);
  }

  /** A member's name (a string), and past the colon after it and the spaces after that. */
  memberName(): string {
    this.skipSpace();
    if (this.byte() !== QUOTE) this.fail('expected a member name');
    this.value();
    const bytes = this.valueBytes();
    this.nameBytes = bytes.length;
    const name = JSON.parse(bytes.toString('utf8')) as string;
    this.expect(COLON);
    this.skipSpace();
    return name;
  }
}

/**
 * One item (its bytes exactly, from a PieceCursor) as JSON.parse would give it, but an object's member named `raw`
 * whose value is a string without escapes is given as the bytes between its quotes (a view of `one`: no string is
 * made, and they are not checked as JSON.parse would check a string's characters). `mark`: the bytes
 * `"<raw>":"`; an item without them (no such member, or one that is not a string) is parsed whole, as is anything
 * but an object. `rawBytes`: the bytes given as raw members (scanned, not parsed).
 */
function itemWithRaw(one: Buffer, raw: string, mark: Buffer): { value: unknown; rawBytes: number } {
  if (one[0] !== OPEN_OBJECT || one.indexOf(mark) < 0) return { value: JSON.parse(one.toString('utf8')), rawBytes: 0 };
  const cursor = new PieceCursor([one]);
  const out: Record<string, unknown> = {};
  let rawBytes = 0;
  cursor.step();
  cursor.skipSpace();
  if (cursor.byte() === CLOSE_OBJECT) cursor.step();
  else
    for (;;) {
      const name = cursor.memberName();
      const isRaw = name === raw && cursor.byte() === QUOTE;
      cursor.value();
      const bytes = cursor.valueBytes();
      const text = bytes.subarray(1, -1);
      let value: unknown;
      if (isRaw && !text.includes(BACKSLASH)) {
        value = text;
        rawBytes += bytes.length;
      } else value = JSON.parse(bytes.toString('utf8'));
      setMember(out, name, value);
      if (cursor.closes(CLOSE_OBJECT)) break;
    }
  if (!cursor.atEnd()) cursor.fail('unexpected data after the item');
  return { value: out, rawBytes };
}

/**
 * Parses `bytes`, a JSON object (one Buffer, or the pieces of one as received: never joined), as JSON.parse would
 * (a repeated member: the last wins), the items of its array member `key` one by one, each given to `item` (which
 * may replace it, e.g. decode it), `pace` charged for them (awaiting the turns it gives). A member `key` that is
 * not an array is parsed whole. Throws SyntaxError for what JSON.parse would refuse, and for anything but one
 * object. `raw`: a member of the items whose string value is given to `item` as its bytes (itemWithRaw), a
 * view of the piece it was received in (copied only when its item spans pieces), which `item` checks: they are
 * not checked as JSON.parse checks a string's characters.
 */
export async function parseSliced(
  bytes: Buffer | readonly Buffer[],
  key: string,
  pace: BulkPace,
  item: (value: unknown, index: number) => unknown = (v) => v,
  raw?: string,
): Promise<Record<string, unknown>> {
  const cursor = new PieceCursor(Buffer.isBuffer(bytes) ? [bytes] : bytes);
  const rawMark = raw === undefined ? undefined : Buffer.from(`${JSON.stringify(raw)}:"`);
  const out: Record<string, unknown> = {};
  cursor.expect(OPEN_OBJECT);
  cursor.skipSpace();
  if (cursor.byte() === CLOSE_OBJECT) cursor.step();
  else {
    for (;;) {
      const name = cursor.memberName();
      // Each member is charged for itself and its name, whatever its value: a body of a million empty members (or of
      // long names) is as much work as one of a million items.
      const named = pace.charge(ITEM_UNITS + Math.ceil(cursor.nameBytes / PARSED_BYTES_PER_UNIT));
      if (named) await named;
      if (name === key && cursor.byte() === OPEN_ARRAY) {
        cursor.step();
        const items: unknown[] = [];
        cursor.skipSpace();
        if (cursor.byte() === CLOSE_ARRAY) cursor.step();
        else {
          for (;;) {
            cursor.value();
            const one = cursor.valueBytes();
            const { value, rawBytes } =
              raw === undefined
                ? { value: JSON.parse(one.toString('utf8')) as unknown, rawBytes: 0 }
                : itemWithRaw(one, raw, rawMark!);
            items.push(item(value, items.length));
            // An item spanning pieces is charged for its copy as well.
            const copied = cursor.spans() ? one.length : 0;
            const due = pace.charge(
              ITEM_UNITS +
                Math.ceil((one.length - rawBytes) / PARSED_BYTES_PER_UNIT + (rawBytes + copied) / BYTES_PER_UNIT),
            );
            if (due) await due;
            if (cursor.closes(CLOSE_ARRAY)) break;
          }
        }
        out[name] = items;
      } else {
        cursor.value();
        const one = cursor.valueBytes();
        setMember(out, name, JSON.parse(one.toString('utf8')) as unknown);
        const due = pace.charge(Math.ceil(one.length / PARSED_BYTES_PER_UNIT));
        if (due) await due;
      }
      if (cursor.closes(CLOSE_OBJECT)) break;
    }
  }
  cursor.skipSpace();
  if (!cursor.atEnd()) cursor.fail('unexpected data after the object');
  return out;
}
