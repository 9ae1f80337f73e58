import { Body, Controller, HttpCode, Post, Req, Res, UploadedFile, UseInterceptors } from '@nestjs/common';
import { FileInterceptor } from '@nestjs/platform-express';
import { ApiBody, ApiConsumes, ApiHeader, ApiOkResponse, ApiOperation, ApiProduces, ApiTags } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { CurrentPrincipal, Principal } from '@app/auth';
import { SpeechFormat } from '@app/engines';
import { assertScope } from '../keys/key-scopes';
import { requestSignal } from '../vision/media-errors';
import { requestIdOf } from '../http/request-id';
import { ApiOpenAiErrors } from '../http/openai-error.doc';
import { UploadAdmission } from '../http/upload-admission';
import {
  OPENAI_VOICES,
  OpenAiSpeechRequest,
  OpenAiTranscriptionRequest,
  OpenAiTranslationRequest,
  SynthesizeRequest,
  TranscribeRequest,
  TranscribeResponse,
} from './dtos/speech.dto';
import { extraTranscriptionFields, refuseForLocalEngine } from './transcription-fields';
import { GatewayConfig } from '../config/gateway.config';
import { relayMediaEvents } from '../vision/media-stream';
import { SseResponse } from '../http/sse-response';
import { speechAudioEvents } from './speech-audio-events';
import { sendSpeech } from './send-speech';
import { SynthesizeSpeechService } from './synthesize-speech.service';
import { TranscribeAudioService, UploadedAudio } from './transcribe-audio.service';
import { toSrt, toVerboseSegments, toVtt } from './transcript-formats';
import { MediaModels } from '../vision/media-models';
import { Metered } from '@app/platform';

@ApiTags('speech')
@ApiHeader({ name: 'Authorization', description: 'Bearer <API_KEY>', required: true })
@Controller('v1')
export class SpeechController {
  constructor(
    private readonly transcribeAudio: TranscribeAudioService,
    private readonly synthesizeSpeech: SynthesizeSpeechService,
    private readonly mediaModels: MediaModels,
    private readonly config: GatewayConfig,
  ) {}

  @Metered()
  @Post('speech/transcribe')
  @HttpCode(200)
  // The key's and the replica's upload slots before multer reads the file (http/upload-admission.ts).
  @UseInterceptors(UploadAdmission, FileInterceptor('file'))
  @ApiConsumes('multipart/form-data')
  @ApiOperation({
    summary: 'Transcribe an audio file',
    description:
      'Served by the OpenAI-compatible upstream (AI_TRANSCRIBE_BASE_URL), else by PocketSphinx when installed (English only), else 503. ' +
      'The duration is measured by decoding the audio and billed at 0.02 yuan per minute (pro rata by the second). Size capped by AI_MEDIA_MAX_AUDIO_BYTES (413).',
  })
  @ApiBody({ type: TranscribeRequest })
  @ApiOkResponse({ type: TranscribeResponse })
  @ApiOpenAiErrors(400, 401, 403, 408, 413, 415, 429, 502, 503, 504)
  transcribe(
    @CurrentPrincipal() principal: Principal,
    @UploadedFile() file: UploadedAudio | undefined,
    @Body() body: TranscribeRequest,
    @Req() req: Request,
  ): Promise<TranscribeResponse> {
    assertScope(principal, 'speech');
    return this.transcribeAudio.transcribe(
      principal,
      file,
      { language: body.language, timestamps: body.timestamps },
      requestIdOf(req),
      requestSignal(req),
    );
  }

  @Metered()
  @Post('audio/transcriptions')
  @HttpCode(200)
  // The key's and the replica's upload slots before multer reads the file (http/upload-admission.ts).
  @UseInterceptors(UploadAdmission, FileInterceptor('file'))
  @ApiConsumes('multipart/form-data')
  @ApiOperation({
    summary: 'Transcribe (OpenAI-compatible alias)',
    description:
      '`model` names a transcription model of the media catalog (whisper-1, gpt-4o-transcribe, gpt-4o-mini-transcribe, or the providers file `mediaModels`), ' +
      'sent upstream under its upstream name and billed at its per-minute price; unknown: 404 model_not_found. ' +
      'With an upstream, `response_format` (json, text, srt, vtt, verbose_json, diarized_json), `timestamp_granularities[]`, `prompt`, `temperature`, `chunking_strategy`, `known_speaker_names[]`, `known_speaker_references[]` and `include[]` are passed on and its answer returned as it is. ' +
      "`stream=true` answers server-sent events transcript.text.delta and transcript.text.done (the upstream's as sent; billed by the audio's duration when the stream ends, nothing when it fails). " +
      'The local engine makes json, text, srt, vtt and verbose_json (segments) itself and streams one delta per utterance; `timestamp_granularities[]=word`, diarized_json, known speakers and include[]=logprobs are a 400 there.',
  })
  @ApiBody({
    type: OpenAiTranscriptionRequest,
    description:
      'multipart/form-data: file (binary), model, language, prompt, response_format, temperature, timestamp_granularities[], include[], stream, chunking_strategy (auto or chunking_strategy[type]=server_vad ...), known_speaker_names[], known_speaker_references[]',
    examples: {
      json: { value: { file: '<audio.mp3>', model: 'gpt-4o-transcribe', response_format: 'json' } },
      stream: { value: { file: '<audio.mp3>', model: 'gpt-4o-mini-transcribe', stream: true } },
      diarized: {
        value: {
          file: '<meeting.wav>',
          model: 'gpt-4o-transcribe-diarize',
          response_format: 'diarized_json',
          chunking_strategy: 'auto',
          'known_speaker_names[]': ['agent'],
          'known_speaker_references[]': ['data:audio/wav;base64,UklGR...'],
        },
      },
    },
  })
  @ApiProduces('application/json', 'text/plain', 'text/event-stream')
  @ApiOpenAiErrors(400, 401, 403, 404, 408, 413, 415, 429, 502, 503, 504)
  async openAiTranscribe(
    @CurrentPrincipal() principal: Principal,
    @UploadedFile() file: UploadedAudio | undefined,
    @Body() body: OpenAiTranscriptionRequest,
    @Req() req: Request,
    @Res() res: Response,
  ): Promise<void> {
    assertScope(principal, 'speech');
    const format = body.response_format ?? 'json';
    const model = this.mediaModels.resolve('transcription', body.model);
    const extra = extraTranscriptionFields(body);
    const localCheck = () => refuseForLocalEngine(body);
    const passthrough = {
      responseFormat: format,
      timestampGranularities: body.timestamp_granularities,
      prompt: body.prompt,
      temperature: body.temperature,
      extra,
    };
    if (body.stream) {
      const stream = await this.transcribeAudio.transcribeStream(
        principal,
        file,
        { language: body.language, model, passthrough, localCheck },
        requestIdOf(req),
        requestSignal(req),
      );
      await relayMediaEvents(new SseResponse(res, this.config.REQUEST_TIMEOUT_MS), stream);
      return;
    }
    const result = await this.transcribeAudio.transcribe(
      principal,
      file,
      { language: body.language, timestamps: true, model, passthrough, localCheck },
      requestIdOf(req),
      requestSignal(req),
    );
    if (result.raw) {
      res.status(200).setHeader('Content-Type', result.raw.contentType);
      res.end(result.raw.body);
      return;
    }
    if (format === 'text') {
      res.type('text/plain; charset=utf-8').send(result.text);
      return;
    }
    if (format === 'srt' || format === 'vtt') {
      res.type('text/plain; charset=utf-8').send(format === 'srt' ? toSrt(result.segments) : toVtt(result.segments));
      return;
    }
    if (format === 'verbose_json') {
      res.json({
        task: 'transcribe',
        language: result.language,
        duration: result.duration,
        text: result.text,
        segments: toVerboseSegments(result.segments),
      });
      return;
    }
    res.json({ text: result.text });
  }

  @Metered()
  @Post('audio/translations')
  @HttpCode(200)
  // The key's and the replica's upload slots before multer reads the file (http/upload-admission.ts).
  @UseInterceptors(UploadAdmission, FileInterceptor('file'))
  @ApiConsumes('multipart/form-data')
  @ApiOperation({
    summary: 'Translate speech into English text (OpenAI-compatible)',
    description:
      'Served by the transcription upstream (AI_TRANSCRIBE_BASE_URL) only: `model` names a transcription model of the media catalog (whisper-1 by default AI_TRANSCRIBE_MODEL), sent under its upstream name; ' +
      "`prompt`, `response_format` (json, text, srt, verbose_json, vtt) and `temperature` are passed on and the answer returned as it is. Billed like a transcription: the model's per-minute price, by the measured duration. " +
      'When only the local PocketSphinx engine is configured: 400 (it transcribes English, it cannot translate); no engine: 503. Size capped by AI_MEDIA_MAX_AUDIO_BYTES (413).',
  })
  @ApiBody({
    type: OpenAiTranslationRequest,
    description: 'multipart/form-data: file (binary), model, prompt, response_format, temperature',
    examples: {
      json: { value: { file: '<german.m4a>', model: 'whisper-1', response_format: 'json' } },
      srt: { value: { file: '<german.m4a>', model: 'whisper-1', response_format: 'srt', temperature: 0 } },
    },
  })
  @ApiProduces('application/json', 'text/plain')
  @ApiOpenAiErrors(400, 401, 403, 404, 408, 413, 415, 429, 502, 503, 504)
  async openAiTranslate(
    @CurrentPrincipal() principal: Principal,
    @UploadedFile() file: UploadedAudio | undefined,
    @Body() body: OpenAiTranslationRequest,
    @Req() req: Request,
    @Res() res: Response,
  ): Promise<void> {
    assertScope(principal, 'speech');
    const model = this.mediaModels.resolve('transcription', body.model);
    const passthrough = {
      responseFormat: body.response_format ?? 'json',
      prompt: body.prompt,
      temperature: body.temperature,
    };
    const raw = await this.transcribeAudio.translate(
      principal,
      file,
      { model, passthrough },
      requestIdOf(req),
      requestSignal(req),
    );
    res.status(200).setHeader('Content-Type', raw.contentType);
    res.end(raw.body);
  }

  @Metered()
  @Post('speech/synthesize')
  @HttpCode(200)
  @ApiOperation({
    summary: 'Synthesize speech',
    description:
      'eSpeak NG in-process (Mandarin `cmn`, English `en-us`; an optional GPL-3.0 package, 503 when absent). Answers the audio bytes: audio/mpeg, audio/wav or audio/ogg. 0.01 yuan per thousand characters. ' +
      'A text longer than one segment (160 characters) is spoken segment by segment and, in mp3 or wav, sent chunked as it is made (no Content-Length or X-Audio-Duration; a wav header with 0xFFFFFFFF sizes); a client that leaves is billed for the characters spoken (docs/ai-gateway/engines.md).',
  })
  @ApiProduces('audio/mpeg', 'audio/wav', 'audio/ogg')
  @ApiBody({
    type: SynthesizeRequest,
    examples: {
      chinese: {
        value: { text: '你好，欢迎使用语音合成服务。', voice: 'zh-CN-XiaoxiaoNeural', format: 'mp3', speed: 1 },
      },
      english: { value: { text: 'Hello there.', voice: 'en-US-GuyNeural', format: 'wav' } },
    },
  })
  @ApiOkResponse({ description: 'The audio', schema: { type: 'string', format: 'binary' } })
  @ApiOpenAiErrors(400, 401, 403, 429, 503)
  async synthesize(
    @CurrentPrincipal() principal: Principal,
    @Body() body: SynthesizeRequest,
    @Req() req: Request,
    @Res() res: Response,
  ): Promise<void> {
    assertScope(principal, 'speech');
    const speech = await this.synthesizeSpeech.stream(principal, body, requestIdOf(req), requestSignal(req));
    await sendSpeech(res, speech, this.config.REQUEST_TIMEOUT_MS);
  }

  @Metered()
  @Post('audio/speech')
  @HttpCode(200)
  @ApiOperation({
    summary: 'Synthesize speech (OpenAI-compatible alias)',
    description:
      'OpenAI voices map to the local voices (docs/ai-gateway/engines.md table: alloy, coral, nova, sage, shimmer, marin -> en-US-JennyNeural; ash, ballad, echo, fable, onyx, verse, cedar -> en-US-GuyNeural); contract voice ids work too. Formats mp3, opus, aac, flac, wav, pcm. ' +
      '`stream_format: "sse"` answers server-sent events: one speech.audio.delta (base64) per segment the local engine speaks (one for a text of up to 160 characters), then speech.audio.done (usage in tokens is 0: the engine counts none; billed per character as usual).',
  })
  @ApiBody({
    type: OpenAiSpeechRequest,
    examples: {
      audio: { value: { model: 'tts-1', input: 'Hello there.', voice: 'alloy', response_format: 'mp3' } },
      sse: {
        value: {
          model: 'gpt-4o-mini-tts',
          input: 'Hello there.',
          voice: 'nova',
          response_format: 'wav',
          stream_format: 'sse',
        },
      },
    },
  })
  @ApiProduces('audio/mpeg', 'audio/ogg', 'audio/aac', 'audio/flac', 'audio/wav', 'audio/pcm', 'text/event-stream')
  @ApiOkResponse({ description: 'The audio', schema: { type: 'string', format: 'binary' } })
  @ApiOpenAiErrors(400, 401, 403, 429, 503)
  async openAiSpeech(
    @CurrentPrincipal() principal: Principal,
    @Body() body: OpenAiSpeechRequest,
    @Req() req: Request,
    @Res() res: Response,
  ): Promise<void> {
    assertScope(principal, 'speech');
    const voice = OPENAI_VOICES[body.voice] ?? body.voice;
    const speech = await this.synthesizeSpeech.stream(
      principal,
      { text: body.input, voice, format: (body.response_format ?? 'mp3') as SpeechFormat, speed: body.speed },
      requestIdOf(req),
      requestSignal(req),
    );
    if (body.stream_format === 'sse') {
      await relayMediaEvents(new SseResponse(res, this.config.REQUEST_TIMEOUT_MS), speechAudioEvents(speech));
      return;
    }
    await sendSpeech(res, speech, this.config.REQUEST_TIMEOUT_MS);
  }
}
