import { Module } from '@nestjs/common';
import { Tokenizer } from './tokenizer';

/** Token counting (tiktoken encodings) for context checks and budget reservations. */
@Module({ providers: [Tokenizer], exports: [Tokenizer] })
export class TokenizerModule {}
