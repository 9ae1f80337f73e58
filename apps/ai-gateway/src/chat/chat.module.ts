import { Module } from '@nestjs/common';
import { TokenizerModule } from '../tokenizer/tokenizer.module';
import { UpstreamsModule } from '../upstreams/upstreams.module';
import { UsageModule } from '../usage/usage.module';
import { ChatController } from './chat.controller';
import { CreateChatCompletion } from './create-chat-completion.service';

@Module({
  imports: [UpstreamsModule, TokenizerModule, UsageModule],
  controllers: [ChatController],
  providers: [CreateChatCompletion],
  exports: [CreateChatCompletion],
})
export class ChatModule {}
