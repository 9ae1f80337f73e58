import { Module } from '@nestjs/common';
import { RoutingModule } from '../routing/routing.module';
import { UsageModule } from '../usage/usage.module';
import { CompletionsController } from './completions.controller';
import { CreateCompletion } from './create-completion';

@Module({
  imports: [RoutingModule, UsageModule],
  controllers: [CompletionsController],
  providers: [CreateCompletion],
})
export class CompletionsModule {}
