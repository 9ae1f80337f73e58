import { Injectable, OnModuleInit } from '@nestjs/common';
import { getEncoding, Tiktoken } from 'js-tiktoken';
import type { ChatMessage } from '@app/providers/llm';

export type EncodingName = 'cl100k_base' | 'o200k_base';

/** Token counting with the real BPE tables (js-tiktoken), loaded once at boot. */
@Injectable()
export class Tokenizer implements OnModuleInit {
  private readonly encodings = new Map<EncodingName, Tiktoken>();

  onModuleInit(): void {
    this.encoding('cl100k_base');
    this.encoding('o200k_base');
  }

  count(text: string, encoding: EncodingName): number {
    if (!text) return 0;
    return this.encoding(encoding).encode(text, 'all').length;
  }

  /** Prompt tokens of a chat request as OpenAI counts them: 3 per message, role and content, 3 to prime the reply. */
  countChat(messages: Pick<ChatMessage, 'role' | 'content' | 'name'>[], encoding: EncodingName): number {
    let total = 3;
    for (const m of messages) {
      total += 3 + this.count(m.role, encoding) + this.count(textOf(m.content), encoding);
      if (m.name) total += 1 + this.count(m.name, encoding);
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
