import { Module } from '@nestjs/common';
import { RoutingModule } from '../routing/routing.module';
import { ModelsController } from './models.controller';

@Module({ imports: [RoutingModule], controllers: [ModelsController] })
export class ModelsModule {}
