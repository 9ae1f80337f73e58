import { Module } from '@nestjs/common';
import { ChatModule } from '../chat/chat.module';
import { CreateResponse } from './create-response.service';
import { ResponsesController } from './responses.controller';
import { ResponsesRepository } from './responses.repository';
import { StoredResponses } from './stored-responses.service';

@Module({
  imports: [ChatModule],
  controllers: [ResponsesController],
  providers: [CreateResponse, ResponsesRepository, StoredResponses],
})
export class ResponsesModule {}
