import { Module } from '@nestjs/common';
import { ChatModule } from '../chat/chat.module';
import { CreateResponse } from './create-response';
import { ResponsesController } from './responses.controller';

@Module({
  imports: [ChatModule],
  controllers: [ResponsesController],
  providers: [CreateResponse],
})
export class ResponsesModule {}
