import { Controller, Get, HttpCode, Res } from '@nestjs/common';
import { ApiExtraModels, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { Public } from '@app/auth';
import { ApiSpeechStream, StreamConfigMessage, StreamResultMessage } from './speech-stream.doc';

/** Swagger has no WebSocket operations: this documents /v1/speech/stream and answers plain HTTP with 426. */
@ApiTags('speech')
@ApiExtraModels(StreamConfigMessage, StreamResultMessage)
@Controller('v1/speech/stream')
export class SpeechStreamDocController {
  @Public()
  @Get()
  @HttpCode(426)
  @ApiSpeechStream()
  describe(@Res() res: Response): void {
    res.setHeader('Upgrade', 'websocket');
    res.status(426).json({
      error: {
        message: 'This is a WebSocket endpoint: connect with a WebSocket client',
        type: 'invalid_request_error',
        code: 'upgrade_required',
        param: null,
      },
    });
  }
}
