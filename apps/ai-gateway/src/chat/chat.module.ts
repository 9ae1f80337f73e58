import { Module } from '@nestjs/common';
import { RoutingModule } from '../routing/routing.module';
import { UsageModule } from '../usage/usage.module';
import { ChatController } from './chat.controller';
import { CreateChatCompletion } from './create-chat-completion';

@Module({
  imports: [RoutingModule, UsageModule],
  controllers: [ChatController],
  providers: [CreateChatCompletion],
  exports: [CreateChatCompletion],
})
export class ChatModule {}
