import { Module } from '@nestjs/common';
import { ChatModule } from '../chat/chat.module';
import { LimitsModule } from '../limits/limits.module';
import { CreateResponse } from './create-response.service';
import { ResponsesController } from './responses.controller';
import { ResponsesRepository } from './responses.repository';
import { StoredResponses } from './stored-responses.service';

@Module({
  imports: [ChatModule, LimitsModule],
  controllers: [ResponsesController],
  providers: [CreateResponse, ResponsesRepository, StoredResponses],
})
export class ResponsesModule {}
