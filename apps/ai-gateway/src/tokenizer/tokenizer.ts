import { Inject, Injectable, OnModuleInit, Optional } from '@nestjs/common';
import { CallAbortedError, LlmRouter } from '@app/llm';
import type { ChatMessage } from '@app/llm';
import { BpeCounter } from './bpe-counter';
import { GatewayConfig } from '../config/gateway.config';
import { LoopHeadroom } from '../limits/loop-headroom';

export type EncodingName = 'cl100k_base' | 'o200k_base';

/** Characters encoded at once; the async counts give the event loop a turn between slices. */
export const SLICE = 16_384;
/**
 * Longest run of one character class (whitespace, or anything else) handed to the encoder in one
 * piece. Byte-pair merging is quadratic in a piece's length, and the pre-tokenizer pattern makes one
 * piece of a whole run of spaces, newlines, U+00A0 or U+3000, letters or symbols.
 */
const MAX_RUN = 64;

/**
 * JavaScript's `\s` (what the encoders' patterns treat as whitespace): ASCII spaces, NBSP, the
 * Unicode space separators, line/paragraph separators and the BOM.
 */
export function isSpace(c: number): boolean {
  if (c < 0x80) return c === 0x20 || (c >= 0x09 && c <= 0x0d);
  return (
    c === 0xa0 ||
    c === 0x1680 ||
    (c >= 0x2000 && c <= 0x200a) ||
    c === 0x2028 ||
    c === 0x2029 ||
    c === 0x202f ||
    c === 0x205f ||
    c === 0x3000 ||
    c === 0xfeff
  );
}

/**
 * Cuts every run of more than `max` characters of one class (whitespace, or non-whitespace of any
 * script, emoji and symbols included), so no pre-tokenizer piece is longer than about 2 * max
 * characters and counting stays linear in the text's length (a long run as one piece is quadratic).
 * One linear pass; each cut adds at most one token to the count.
 */
export function splitLongRuns(text: string, max = MAX_RUN): string[] {
  let out: string[] | undefined;
  let start = 0;
  let run = 0;
  let space = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    const s = isSpace(c);
    if (s !== space) {
      space = s;
      run = 1;
      continue;
    }
    if (++run > max) {
      const cut = c >= 0xdc00 && c <= 0xdfff && i - 1 > start ? i - 1 : i; // never split a surrogate pair
      if (cut > start) (out ??= []).push(text.slice(start, cut));
      start = cut;
      run = i - cut + 1;
    }
  }
  if (!out) return [text];
  out.push(text.slice(start));
  return out;
}

/**
 * Turns of the event loop shared out between API keys: each turn lets one waiting count of every key go
 * on for one slice. A key counting many large requests at once gets one slice a turn, as a key counting
 * one does, so another key's call waits at most one slice per busy key between two of its own steps
 * (bench/suites/noisy-neighbour.js), instead of one per request in flight.
 */
export class FairTurns {
  private readonly waiting = new Map<string, Array<() => void>>();
  private scheduled = false;

  /** `headroom`: when a turn may start (LoopHeadroom: bulk work gives way to calls); the next turn of the loop by default. */
  constructor(private readonly headroom = new LoopHeadroom()) {}

  /** Resolves in a coming turn of the event loop, after the counts of `key` that asked before. */
  next(key: string): Promise<void> {
    return new Promise<void>((resolve) => {
      const queue = this.waiting.get(key);
      if (queue) queue.push(resolve);
      else this.waiting.set(key, [resolve]);
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    this.headroom.schedule(this.turn);
  }

  private readonly turn = (): void => {
    this.scheduled = false;
    try {
      for (const [key, queue] of this.waiting) {
        queue.shift()!();
        if (queue.length === 0) this.waiting.delete(key);
      }
    } finally {
      // Whatever happened in this turn, the counts still waiting get the next one.
      if (this.waiting.size > 0) this.schedule();
    }
  };
}

/** Characters counted between two turns of the event loop (see Tokenizer.countUpToAsync). */
export class Pace {
  private pending = 0;

  /**
   * `turn`: waits for this request's next turn (FairTurns for a key's requests); the next turn of the loop by
   * default. `gone`: whether the request's client left, checked at each turn: its count then stops there.
   */
  /** When the work resumed after its last turn (performance.now()), to report the slice's time. */
  private resumedAt: number | undefined;

  /**
   * `worked`: told how long each slice took, from a turn to the next one due (LoopHeadroom.bulkWorked).
   */
  constructor(
    private readonly onYield: () => void = () => undefined,
    private readonly turn: () => Promise<void> = () => new Promise<void>((resolve) => setImmediate(resolve)),
    private readonly gone: () => boolean = () => false,
    private readonly worked?: (ms: number) => void,
  ) {}

  /** Waits for the next turn of the event loop once SLICE characters were counted since the last one. */
  async spend(chars: number): Promise<void> {
    const due = this.charge(chars);
    if (due) await due;
  }

  /**
   * spend without a promise when no turn is due: undefined then, else the turn to wait for (the work is
   * charged either way). Loops over thousands of small items call it per item: an async call per item
   * costs more than the item's own work (a promise each, and the young-generation collections they bring).
   */
  charge(chars: number): Promise<void> | undefined {
    if (this.pending >= SLICE) {
      this.pending = chars;
      this.onYield();
      if (this.worked && this.resumedAt !== undefined) this.worked(performance.now() - this.resumedAt);
      return this.nextTurn();
    }
    this.pending += chars;
    return undefined;
  }

  /**
   * The time since the last turn (or the last idle) was not work: waiting for an upstream's next piece, say. The
   * slice reported to `worked` at the next turn counts from now, so time the loop was idle is not taken for bulk work.
   */
  idle(): void {
    if (this.resumedAt !== undefined) this.resumedAt = performance.now();
  }

  private async nextTurn(): Promise<void> {
    await this.turn();
    if (this.gone()) throw new CallAbortedError();
    if (this.worked) this.resumedAt = performance.now();
  }
}

/** Token counting with the real BPE tables (js-tiktoken's rank files, same counts), loaded once at boot. */
@Injectable()
export class Tokenizer implements OnModuleInit {
  private readonly encodings = new Map<EncodingName, BpeCounter>();
  /** Turns given to the event loop by the async counts (read by tests). */
  yields = 0;
  private readonly turns: FairTurns;
  private readonly headroom: LoopHeadroom;

  constructor(
    @Optional() @Inject(LlmRouter) private readonly router?: LlmRouter,
    @Optional() @Inject(GatewayConfig) config?: GatewayConfig,
  ) {
    this.headroom = new LoopHeadroom(config?.AI_BULK_LOOP_SHARE ?? 1);
    this.turns = new FairTurns(this.headroom);
  }

  /** Loads the tables of the served models at boot (others on first use, where building one would delay that call). */
  onModuleInit(): void {
    const used = new Set<EncodingName>((this.router?.servedModels() ?? []).map((m) => m.encoding));
    if (used.size === 0) used.add('cl100k_base');
    for (const name of used) this.encoding(name);
  }

  count(text: string, encoding: EncodingName): number {
    return this.countUpTo(text, encoding, Infinity);
  }

  /**
   * Token count, stopping early once it exceeds `limit`. Long texts are encoded in slices of SLICE
   * characters; a cut inside a word adds at most one token per slice.
   */
  countUpTo(text: string, encoding: EncodingName, limit: number): number {
    if (!text) return 0;
    const enc = this.encoding(encoding);
    let total = 0;
    for (let i = 0; i < text.length && total <= limit; i += SLICE)
      total += this.countSlice(enc, text.length <= SLICE ? text : text.slice(i, i + SLICE));
    return total;
  }

  /**
   * Prompt tokens of a chat request's messages as OpenAI counts them: 3 per message, role, text and
   * name, 3 to prime the reply; plus tool calls (name and arguments), tool_call_id, and the documented
   * bounds of images, audio and files (see partTokens).
   */
  countChat(messages: CountedMessage[], encoding: EncodingName, limit = Infinity, image?: ImagePrice): number {
    let total = 3;
    for (const m of messages) {
      const { texts, fixed } = piecesOf(m, image);
      total += 3 + fixed;
      for (const t of texts) total += this.countUpTo(t, encoding, limit - total);
      if (total > limit) break;
    }
    return total;
  }

  /**
   * A pace for the async counts of one request: shared by its texts so many small ones also give way.
   * With the caller's `key`, its turns are shared with the key's other requests (FairTurns); with
   * `clientGone`, a count whose client left stops at its next turn (CallAbortedError) instead of using them.
   */
  pace(key?: string, clientGone?: { aborted: boolean }): Pace {
    if (key === undefined) return new Pace(() => this.yields++);
    return new Pace(
      () => this.yields++,
      () => this.turns.next(key),
      () => clientGone?.aborted === true,
      (ms) => this.headroom.bulkWorked(ms),
    );
  }

  /**
   * countUpTo for request handlers: the same count, giving the event loop a turn after every SLICE
   * characters of work (with `pace`, counted across the request's texts), so no body holds the loop
   * for more than one slice (a few milliseconds) however large the body limit allows it to be.
   */
  async countUpToAsync(text: string, encoding: EncodingName, limit: number, pace: Pace = this.pace()): Promise<number> {
    if (!text) return 0;
    const enc = this.encoding(encoding);
    let total = 0;
    for (let i = 0; i < text.length && total <= limit; i += SLICE) {
      const slice = text.length <= SLICE ? text : text.slice(i, i + SLICE);
      await pace.spend(slice.length);
      total += this.countSlice(enc, slice);
    }
    return total;
  }

  /**
   * countUpToAsync, as a number when `text` is one slice or less and no turn is due: no promise per
   * text for requests of thousands of short texts (embeddings inputs, chat messages). Await it when it is not a number.
   */
  countPaced(text: string, encoding: EncodingName, limit: number, pace: Pace): number | Promise<number> {
    if (text.length > SLICE) return this.countUpToAsync(text, encoding, limit, pace);
    if (!text) return 0;
    const due = pace.charge(text.length);
    if (!due) return this.countUpTo(text, encoding, limit);
    return due.then(() => this.countUpTo(text, encoding, limit));
  }

  /** countChat for request handlers (see countUpToAsync). */
  async countChatAsync(
    messages: CountedMessage[],
    encoding: EncodingName,
    limit = Infinity,
    pace: Pace = this.pace(),
    image?: ImagePrice,
  ): Promise<number> {
    let total = 3;
    for (const m of messages) {
      const { texts, fixed } = piecesOf(m, image);
      total += 3 + fixed;
      for (const t of texts) {
        const due = pace.charge(Math.min(t.length, 64));
        if (due) await due;
        const n = this.countPaced(t, encoding, limit - total, pace);
        total += typeof n === 'number' ? n : await n;
      }
      if (total > limit) break;
    }
    return total;
  }

  /**
   * Tokens of the request's definitions that reach the model besides the messages: `tools` and legacy
   * `functions` (serialized as JSON, which is longer than the form OpenAI renders them in), a
   * `response_format` JSON schema, plus TOOLS_OVERHEAD when there are tools.
   */
  async countDefinitionsAsync(
    body: { tools?: unknown; functions?: unknown; response_format?: unknown },
    encoding: EncodingName,
    limit = Infinity,
    pace: Pace = this.pace(),
  ): Promise<number> {
    let total = 0;
    const hasTools =
      (Array.isArray(body.tools) && body.tools.length > 0) ||
      (Array.isArray(body.functions) && body.functions.length > 0);
    if (hasTools) total += TOOLS_OVERHEAD;
    for (const v of [
      body.tools,
      body.functions,
      fields(body.response_format).type === 'json_schema' ? body.response_format : undefined,
    ]) {
      if (v == null || total > limit) continue;
      total += await this.countUpToAsync(JSON.stringify(v), encoding, limit - total, pace);
    }
    return total;
  }

  /** Token ids of `encoding` are 0 .. vocabularySize - 1 (some of them unused). */
  vocabularySize(encoding: EncodingName): number {
    return this.encoding(encoding).vocabularySize;
  }

  /** The first id of `ids` that is not a token of `encoding`, as its index; -1 when all are. */
  unknownTokenAt(ids: readonly number[], encoding: EncodingName): number {
    const enc = this.encoding(encoding);
    return ids.findIndex((id) => !enc.has(id));
  }

  /**
   * The text token ids stand for (for upstreams that take text only), or undefined when an id is not a
   * token of `encoding` or the ids do not make whole UTF-8 characters (a token array cut mid-character).
   */
  decode(ids: readonly number[], encoding: EncodingName): string | undefined {
    const bytes = this.encoding(encoding).decodeBytes(ids);
    if (!bytes) return undefined;
    try {
      return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    } catch {
      return undefined;
    }
  }

  /** Work units of the encoders so far (bytes encoded plus merge steps): tests check they grow linearly. */
  work(): number {
    let w = 0;
    for (const enc of this.encodings.values()) w += enc.work;
    return w;
  }

  private countSlice(enc: BpeCounter, slice: string): number {
    let total = 0;
    for (const piece of splitLongRuns(slice)) total += enc.count(piece);
    return total;
  }

  private encoding(name: EncodingName): BpeCounter {
    let enc = this.encodings.get(name);
    if (!enc) {
      enc = BpeCounter.load(name);
      this.encodings.set(name, enc);
    }
    return enc;
  }
}

export function textOf(content: ChatMessage['content']): string {
  if (content == null) return '';
  if (typeof content === 'string') return content;
  return content.map((p) => (typeof p.text === 'string' ? p.text : '')).join('');
}

/** A message as counted: the validated chat shape (chat/chat-shape.ts), loosely typed. */
export type CountedMessage = { role: string; content?: unknown; name?: unknown; [k: string]: unknown };

/** Fixed tokens added once when a request has tools or functions (OpenAI's tool preamble). */
export const TOOLS_OVERHEAD = 16;
/** OpenAI's image pricing (GPT-4o family): `detail: low` is 85 tokens; high/auto 170 per 512 px tile plus 85. */
export const IMAGE_BASE_TOKENS = 85;
export const IMAGE_TILE_TOKENS = 170;
/** A model's image price in prompt tokens (providers file `models.<name>.imageTokens`); GPT-4o's by default. */
export type ImagePrice = { base: number; tile: number };
const GPT_4O_IMAGES: ImagePrice = { base: IMAGE_BASE_TOKENS, tile: IMAGE_TILE_TOKENS };

/**
 * OpenAI's documented tile formula: scale to fit in 2048 x 2048, then so the shortest side is 768 px
 * (only ever down), count the 512 px tiles: 170 each plus 85. `low` is 85 whatever the size.
 */
export function imageTokens(
  width: number,
  height: number,
  detail: 'low' | 'high' | 'auto' = 'auto',
  price: ImagePrice = GPT_4O_IMAGES,
): number {
  if (detail === 'low') return price.base;
  let w = width;
  let h = height;
  if (w > 2048 || h > 2048) {
    const r = 2048 / Math.max(w, h);
    w *= r;
    h *= r;
  }
  if (Math.min(w, h) > 768) {
    const r = 768 / Math.min(w, h);
    w *= r;
    h *= r;
  }
  return price.tile * Math.ceil(w / 512) * Math.ceil(h / 512) + price.base;
}

/** The most any image costs under the tile formula (768 x 2048 after scaling: 2 x 4 tiles): used when the size is unknown. */
export const IMAGE_MAX_TOKENS = imageTokens(768, 2048, 'high');

/** Audio: a bound of 50 tokens per second (OpenAI's audio models use about 10 to 25). */
export const AUDIO_TOKENS_PER_SECOND = 50;
/** The fewest bytes a second of audio takes: mp3 at 8 kbit/s; wav at 8000 B/s whatever its (caller-written) header says. */
export const MP3_MIN_BYTES_PER_SECOND = 1000;
export const WAV_MIN_BYTES_PER_SECOND = 8000;
/** Files (PDF): a bound of one token per decoded byte (text and page images OpenAI extracts stay below it for ordinary PDFs). */
export const FILE_TOKENS_PER_BYTE = 1;

/** Bytes a base64 text decodes to (data: URL prefix ignored). */
function base64Bytes(data: string): number {
  const comma = data.startsWith('data:') ? data.indexOf(',') + 1 : 0;
  return Math.ceil(((data.length - comma) * 3) / 4);
}

/** The first `n` decoded bytes of a base64 text (or data: URL), or undefined when it is not base64. */
function headBytes(data: string, n: number): Buffer | undefined {
  const comma = data.startsWith('data:') ? data.indexOf(',') + 1 : 0;
  const head = data.slice(comma, comma + Math.ceil(n / 3) * 4);
  const buf = Buffer.from(head, 'base64');
  return buf.length >= n ? buf : undefined;
}

/** Width and height from the header of a PNG or GIF data URL (fixed offsets); other formats: undefined (the bound applies). */
export function imageSizeOf(url: string): { width: number; height: number } | undefined {
  if (!url.startsWith('data:image/')) return undefined;
  const b = headBytes(url, 24);
  if (!b) return undefined;
  if (b.readUInt32BE(0) === 0x89504e47 && b.toString('latin1', 12, 16) === 'IHDR')
    return { width: b.readUInt32BE(16), height: b.readUInt32BE(20) };
  if (b.toString('latin1', 0, 4) === 'GIF8') return { width: b.readUInt16LE(6), height: b.readUInt16LE(8) };
  return undefined;
}

/** An object's fields, or no fields for anything else (the counted shapes are loosely typed). */
function fields(v: unknown): Record<string, unknown> {
  return typeof v === 'object' && v !== null ? (v as Record<string, unknown>) : {};
}

/** A string field as counted; validation (chat shape, Responses translation) lets only strings through. */
function textField(v: unknown): string {
  return typeof v === 'string' ? v : '';
}

/** The documented bound of one non-text content part. */
export function partTokens(part: unknown, image: ImagePrice = GPT_4O_IMAGES): number {
  const p = fields(part);
  switch (p.type) {
    case 'image_url': {
      const img = fields(p.image_url);
      if (img.detail === 'low') return image.base;
      const size = imageSizeOf(textField(img.url));
      // Any detail but `low` prices as the full tile formula; unknown size: its maximum (768 x 2048 after scaling, 8 tiles).
      return size && size.width > 0 && size.height > 0
        ? imageTokens(size.width, size.height, 'auto', image)
        : imageTokens(768, 2048, 'high', image);
    }
    case 'input_audio': {
      const audio = fields(p.input_audio);
      const data = textField(audio.data);
      const bytes = base64Bytes(data);
      // The header's byte rate (and sample rate, channels, bits) are the caller's bytes: a forged high
      // rate would shrink the counted duration. wav is counted at the floor rate, the longest the bytes
      // can last at 8000 B/s (8 kHz 8-bit mono); an honest 16-bit/24 kHz file is held a few times over.
      const perSecond = audio.format === 'wav' ? WAV_MIN_BYTES_PER_SECOND : MP3_MIN_BYTES_PER_SECOND;
      return Math.ceil((bytes / perSecond) * AUDIO_TOKENS_PER_SECOND) + 1;
    }
    case 'file':
      return Math.ceil(base64Bytes(textField(fields(p.file).file_data)) * FILE_TOKENS_PER_BYTE) + 1;
    default:
      return 0;
  }
}

/** The texts of a message to count and its fixed tokens (parts' bounds, tool call framing). */
export function piecesOf(m: CountedMessage, image?: ImagePrice): { texts: string[]; fixed: number } {
  const texts: string[] = [String(m.role ?? '')];
  let fixed = 0;
  const c = m.content;
  if (typeof c === 'string') texts.push(c);
  else if (Array.isArray(c)) {
    for (const part of c as unknown[]) {
      const p = fields(part);
      if (typeof p.text === 'string') texts.push(p.text);
      else if (typeof p.refusal === 'string') texts.push(p.refusal);
      else fixed += partTokens(part, image);
    }
  }
  if (typeof m.name === 'string' && m.name) {
    texts.push(m.name);
    fixed += 1;
  }
  if (typeof m.tool_call_id === 'string') texts.push(m.tool_call_id);
  if (typeof m.refusal === 'string') texts.push(m.refusal);
  const calls: unknown[] = Array.isArray(m.tool_calls) ? m.tool_calls : [];
  for (const item of calls) {
    fixed += 3;
    const call = fields(item);
    const f = fields(call.function ?? call.custom);
    if (typeof call.id === 'string') texts.push(call.id);
    if (typeof f.name === 'string') texts.push(f.name);
    if (typeof f.arguments === 'string') texts.push(f.arguments);
    if (typeof f.input === 'string') texts.push(f.input);
  }
  if (m.function_call && typeof m.function_call === 'object') {
    const fc = fields(m.function_call);
    fixed += 3;
    if (typeof fc.name === 'string') texts.push(fc.name);
    if (typeof fc.arguments === 'string') texts.push(fc.arguments);
  }
  return { texts, fixed };
}
