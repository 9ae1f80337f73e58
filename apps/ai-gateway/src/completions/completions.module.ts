import { Module } from '@nestjs/common';
import { TokenizerModule } from '../tokenizer/tokenizer.module';
import { UpstreamsModule } from '../upstreams/upstreams.module';
import { UsageModule } from '../usage/usage.module';
import { CompletionsController } from './completions.controller';
import { CreateCompletion } from './create-completion.service';

@Module({
  imports: [UpstreamsModule, TokenizerModule, UsageModule],
  controllers: [CompletionsController],
  providers: [CreateCompletion],
})
export class CompletionsModule {}
