import { Module } from '@nestjs/common';
import { UpstreamsModule } from '../upstreams/upstreams.module';
import { ModelsController } from './models.controller';

@Module({ imports: [UpstreamsModule], controllers: [ModelsController] })
export class ModelsModule {}
