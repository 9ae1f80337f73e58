import { Module } from '@nestjs/common';
import { TokenizerModule } from '../tokenizer/tokenizer.module';
import { UpstreamsModule } from '../upstreams/upstreams.module';
import { UsageModule } from '../usage/usage.module';
import { CreateEmbeddings } from './create-embeddings.service';
import { EmbeddingsController } from './embeddings.controller';
import { EmbeddingsWorkerMetrics } from './worker-metrics';

@Module({
  imports: [UpstreamsModule, TokenizerModule, UsageModule],
  controllers: [EmbeddingsController],
  providers: [CreateEmbeddings, EmbeddingsWorkerMetrics],
})
export class EmbeddingsModule {}
