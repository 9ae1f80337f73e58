import { Inject, Injectable, OnModuleInit, Optional } from '@nestjs/common';
import { getEncoding, Tiktoken } from 'js-tiktoken';
import { LlmRouter } from '@app/providers/llm';
import type { ChatMessage } from '@app/providers/llm';

export type EncodingName = 'cl100k_base' | 'o200k_base';

const SLICE = 65_536;

/** Token counting with the real BPE tables (js-tiktoken), loaded once at boot. */
@Injectable()
export class Tokenizer implements OnModuleInit {
  private readonly encodings = new Map<EncodingName, Tiktoken>();

  constructor(@Optional() @Inject(LlmRouter) private readonly router?: LlmRouter) {}

  /**
   * Loads the tables of the served models at boot (others on first use): each table holds ~100 MB,
   * and loading both when only one is used took the gateway's RSS past 300 MB (npm run bench).
   */
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
    if (text.length <= SLICE) return enc.encode(text, 'all').length;
    let total = 0;
    for (let i = 0; i < text.length && total <= limit; i += SLICE) total += enc.encode(text.slice(i, i + SLICE), 'all').length;
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

  private encoding(name: EncodingName): Tiktoken {
    let enc = this.encodings.get(name);
    if (!enc) {
      enc = getEncoding(name);
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
