import { Inject, Injectable, OnModuleInit, Optional } from '@nestjs/common';
import { LlmRouter } from '@app/providers/llm';
import type { ChatMessage } from '@app/providers/llm';
import { BpeCounter } from './bpe-counter';

export type EncodingName = 'cl100k_base' | 'o200k_base';

const SLICE = 65_536;
/** Longest run of non-space characters encoded in one piece: byte-pair merging is quadratic in it. */
const MAX_RUN = 64;
const LONG_RUN = new RegExp(`\\S{${MAX_RUN + 1}}`);

/**
 * Cuts runs of more than MAX_RUN non-space characters (20k CJK characters or emoji without a space
 * are one BPE "word" and took minutes of CPU); each cut adds at most one token to the count.
 */
export function splitLongRuns(text: string, max = MAX_RUN): string[] {
  if (!LONG_RUN.test(text)) return [text];
  const out: string[] = [];
  let start = 0;
  let run = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x20 || c === 0x0a || c === 0x09 || c === 0x0d) {
      run = 0;
      continue;
    }
    if (++run > max) {
      const cut = c >= 0xdc00 && c <= 0xdfff ? i - 1 : i; // never split a surrogate pair
      if (cut > start) out.push(text.slice(start, cut));
      start = cut;
      run = i - cut + 1;
    }
  }
  out.push(text.slice(start));
  return out;
}

/** Token counting with the real BPE tables (js-tiktoken's rank files, same counts), loaded once at boot. */
@Injectable()
export class Tokenizer implements OnModuleInit {
  private readonly encodings = new Map<EncodingName, BpeCounter>();

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
   * Token count, stopping early once it exceeds `limit` so a huge body cannot hold the event loop.
   * Long texts are encoded in slices; a cut inside a word adds at most one token per slice.
   */
  countUpTo(text: string, encoding: EncodingName, limit: number): number {
    if (!text) return 0;
    const enc = this.encoding(encoding);
    let total = 0;
    for (let i = 0; i < text.length && total <= limit; i += SLICE) {
      for (const piece of splitLongRuns(text.length <= SLICE ? text : text.slice(i, i + SLICE))) total += enc.count(piece);
    }
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
