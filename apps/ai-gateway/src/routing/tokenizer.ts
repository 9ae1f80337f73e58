import { Inject, Injectable, OnModuleInit, Optional } from '@nestjs/common';
import { LlmRouter } from '@app/providers/llm';
import type { ChatMessage } from '@app/providers/llm';
import { BpeCounter } from './bpe-counter';

export type EncodingName = 'cl100k_base' | 'o200k_base';

/** Characters encoded at once; the async counts give the event loop a turn between slices. */
const SLICE = 16_384;
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
  return c === 0xa0 || c === 0x1680 || (c >= 0x2000 && c <= 0x200a) || c === 0x2028 || c === 0x2029 || c === 0x202f || c === 0x205f || c === 0x3000 || c === 0xfeff;
}

/**
 * Cuts every run of more than `max` characters of one class (whitespace, or non-whitespace of any
 * script, emoji and symbols included), so no pre-tokenizer piece is longer than about 2 * max
 * characters and counting stays linear in the text's length (one 65 KB run of U+00A0 took 25 s of
 * CPU as one piece). One linear pass; each cut adds at most one token to the count.
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

/** Characters counted between two turns of the event loop (see Tokenizer.countUpToAsync). */
export class Pace {
  private pending = 0;

  constructor(private readonly onYield: () => void = () => undefined) {}

  /** Waits for the next turn of the event loop once SLICE characters were counted since the last one. */
  async spend(chars: number): Promise<void> {
    if (this.pending >= SLICE) {
      this.pending = 0;
      this.onYield();
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
    this.pending += chars;
  }
}

/** Token counting with the real BPE tables (js-tiktoken's rank files, same counts), loaded once at boot. */
@Injectable()
export class Tokenizer implements OnModuleInit {
  private readonly encodings = new Map<EncodingName, BpeCounter>();
  /** Turns given to the event loop by the async counts (read by tests). */
  yields = 0;

  constructor(@Optional() @Inject(LlmRouter) private readonly router?: LlmRouter) {}

  /** Loads the tables of the served models at boot (others on first use; each takes ~0.2 s to build). */
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
    for (let i = 0; i < text.length && total <= limit; i += SLICE) total += this.countSlice(enc, text.length <= SLICE ? text : text.slice(i, i + SLICE));
    return total;
  }

  /** Prompt tokens of a chat request as OpenAI counts them: 3 per message, role and content, 3 to prime the reply. */
  countChat(messages: Pick<ChatMessage, 'role' | 'content' | 'name'>[], encoding: EncodingName, limit = Infinity): number {
    let total = 3;
    for (const m of messages) {
      total += 3 + this.count(m.role, encoding) + this.countUpTo(textOf(m.content), encoding, limit - total);
      if (m.name) total += 1 + this.count(m.name, encoding);
      if (total > limit) break;
    }
    return total;
  }

  /** A pace for the async counts of one request: shared by its texts so many small ones also give way. */
  pace(): Pace {
    return new Pace(() => this.yields++);
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

  /** countChat for request handlers (see countUpToAsync). */
  async countChatAsync(messages: Pick<ChatMessage, 'role' | 'content' | 'name'>[], encoding: EncodingName, limit = Infinity, pace: Pace = this.pace()): Promise<number> {
    let total = 3;
    for (const m of messages) {
      await pace.spend(m.role.length + (m.name?.length ?? 0));
      total += 3 + this.count(m.role, encoding) + (await this.countUpToAsync(textOf(m.content), encoding, limit - total, pace));
      if (m.name) total += 1 + this.count(m.name, encoding);
      if (total > limit) break;
    }
    return total;
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
