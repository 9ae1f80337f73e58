import { Module } from '@nestjs/common';
import { MulterModule } from '@nestjs/platform-express';
import { memoryStorage } from 'multer';
import { GatewayConfig } from '../config/gateway.config';
import { UploadsModule } from '../http/uploads.module';
import { KeysModule } from '../keys/keys.module';
import { EngineLimits } from '../vision/engine-limits';
import { UsageModule } from '../usage/usage.module';
import { UpstreamsModule } from '../upstreams/upstreams.module';
import { MediaModels } from '../vision/media-models';
import { SpeechStreamDocController } from './speech-stream.doc.controller';
import { SpeechStreamGateway } from './speech-stream.gateway';
import { SpeechController } from './speech.controller';
import { SynthesizeSpeechService } from './synthesize-speech.service';
import { TranscribeAudioService } from './transcribe-audio.service';
import { TranscriptionEngines } from './transcription-engines';

/** /v1/speech/transcribe, /v1/speech/synthesize, their OpenAI aliases under /v1/audio, and the /v1/speech/stream WebSocket. */
@Module({
  imports: [
    KeysModule,
    UsageModule,
    UpstreamsModule,
    UploadsModule,
    MulterModule.registerAsync({
      inject: [GatewayConfig],
      useFactory: (config: GatewayConfig) => ({
        storage: memoryStorage(),
        limits: { fileSize: config.AI_MEDIA_MAX_AUDIO_BYTES, files: 1, fields: 20, fieldSize: 64 * 1024 },
      }),
    }),
  ],
  controllers: [SpeechController, SpeechStreamDocController],
  providers: [
    EngineLimits,
    MediaModels,
    TranscriptionEngines,
    TranscribeAudioService,
    SynthesizeSpeechService,
    SpeechStreamGateway,
  ],
})
export class SpeechModule {}
