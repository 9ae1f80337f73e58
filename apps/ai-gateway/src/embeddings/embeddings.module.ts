import { Module } from '@nestjs/common';
import { RoutingModule } from '../routing/routing.module';
import { UsageModule } from '../usage/usage.module';
import { CreateEmbeddings } from './create-embeddings';
import { EmbeddingsController } from './embeddings.controller';

@Module({
  imports: [RoutingModule, UsageModule],
  controllers: [EmbeddingsController],
  providers: [CreateEmbeddings],
})
export class EmbeddingsModule {}
