import { Module } from '@nestjs/common';
import { ChatModule } from '../chat/chat.module';
import { CreateResponse } from './create-response';
import { ResponsesController } from './responses.controller';
import { ResponsesStore } from './responses-store';

@Module({
  imports: [ChatModule],
  controllers: [ResponsesController],
  providers: [CreateResponse, ResponsesStore],
})
export class ResponsesModule {}
