import { Module } from '@nestjs/common';
import { ChatModule } from '../chat/chat.module';
import { CreateResponse } from './create-response';
import { ResponsesController } from './responses.controller';
import { ResponsesStore } from './responses-store';
import { StoredResponses } from './stored-responses';

@Module({
  imports: [ChatModule],
  controllers: [ResponsesController],
  providers: [CreateResponse, ResponsesStore, StoredResponses],
})
export class ResponsesModule {}
