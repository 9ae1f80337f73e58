import { Module } from '@nestjs/common';
import { TokenizerModule } from '../tokenizer/tokenizer.module';
import { UpstreamsModule } from '../upstreams/upstreams.module';
import { UsageModule } from '../usage/usage.module';
import { CreateEmbeddings } from './create-embeddings.service';
import { EmbeddingsController } from './embeddings.controller';

@Module({
  imports: [UpstreamsModule, TokenizerModule, UsageModule],
  controllers: [EmbeddingsController],
  providers: [CreateEmbeddings],
})
export class EmbeddingsModule {}
