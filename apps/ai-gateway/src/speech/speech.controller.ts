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
import { OPENAI_VOICES, OpenAiSpeechRequest, OpenAiTranscriptionRequest, SynthesizeRequest, TranscribeRequest, TranscribeResponse } from './dtos/speech.dto';
import { SynthesizeSpeechService } from './synthesize-speech.service';
import { TranscribeAudioService, UploadedAudio } from './transcribe-audio.service';
import { toSrt, toVtt } from './transcript-formats';
import { MediaModels } from '../vision/media-models';
import { GatewayError, GatewayErrorCode } from '@app/envelope';

@ApiTags('speech')
@ApiHeader({ name: 'Authorization', description: 'Bearer <API_KEY>', required: true })
@Controller('v1')
export class SpeechController {
  constructor(
    private readonly transcribeAudio: TranscribeAudioService,
    private readonly synthesizeSpeech: SynthesizeSpeechService,
    private readonly mediaModels: MediaModels,
  ) {}

  @Post('speech/transcribe')
  @HttpCode(200)
  @UseInterceptors(FileInterceptor('file'))
  @ApiConsumes('multipart/form-data')
  @ApiOperation({
    summary: 'Transcribe an audio file',
    description:
      'Served by the OpenAI-compatible upstream (AI_TRANSCRIBE_BASE_URL), else by PocketSphinx when installed (English only), else 503. ' +
      'The duration is measured by decoding the audio and billed at 0.02 yuan per minute (pro rata by the second). Size capped by AI_MEDIA_MAX_AUDIO_BYTES (413).',
  })
  @ApiBody({ type: TranscribeRequest })
  @ApiOkResponse({ type: TranscribeResponse })
  @ApiOpenAiErrors(400, 401, 403, 413, 415, 429, 502, 503, 504)
  transcribe(@CurrentPrincipal() principal: Principal, @UploadedFile() file: UploadedAudio | undefined, @Body() body: TranscribeRequest, @Req() req: Request): Promise<TranscribeResponse> {
    assertScope(principal, 'speech');
    return this.transcribeAudio.transcribe(principal, file, { language: body.language, timestamps: body.timestamps }, requestIdOf(req), requestSignal(req));
  }

  @Post('audio/transcriptions')
  @HttpCode(200)
  @UseInterceptors(FileInterceptor('file'))
  @ApiConsumes('multipart/form-data')
  @ApiOperation({
    summary: 'Transcribe (OpenAI-compatible alias)',
    description:
      '`model` names a transcription model of the media catalog (whisper-1, gpt-4o-transcribe, gpt-4o-mini-transcribe, or the providers file `mediaModels`), ' +
      'sent upstream under its upstream name and billed at its per-minute price; unknown: 404 model_not_found. ' +
      'With an upstream, `response_format` (json, text, srt, vtt, verbose_json), `timestamp_granularities[]`, `prompt` and `temperature` are passed on and its answer returned as it is. ' +
      'The local engine makes json, text, srt, vtt and verbose_json (segments) itself; `timestamp_granularities[]=word` is a 400 there.',
  })
  @ApiBody({ type: OpenAiTranscriptionRequest })
  @ApiProduces('application/json', 'text/plain')
  @ApiOpenAiErrors(400, 401, 403, 404, 413, 415, 429, 502, 503, 504)
  async openAiTranscribe(@CurrentPrincipal() principal: Principal, @UploadedFile() file: UploadedAudio | undefined, @Body() body: OpenAiTranscriptionRequest, @Req() req: Request, @Res() res: Response): Promise<void> {
    assertScope(principal, 'speech');
    const format = body.response_format ?? 'json';
    const granularities = body.timestamp_granularities;
    const model = this.mediaModels.resolve('transcription', body.model);
    const localCheck = () => {
      if (granularities?.includes('word')) {
        throw new GatewayError(GatewayErrorCode.WordTimestampsUnavailable);
      }
    };
    const passthrough = { responseFormat: format, timestampGranularities: granularities, prompt: body.prompt, temperature: body.temperature };
    const result = await this.transcribeAudio.transcribe(principal, file, { language: body.language, timestamps: true, model, passthrough, localCheck }, requestIdOf(req), requestSignal(req));
    if (result.raw) {
      res.status(200).setHeader('Content-Type', result.raw.contentType);
      res.end(result.raw.body);
      return;
    }
    const segments = result.segments.map((s, id) => ({ id, ...s }));
    if (format === 'text') {
      res.type('text/plain; charset=utf-8').send(result.text);
      return;
    }
    if (format === 'srt' || format === 'vtt') {
      res.type('text/plain; charset=utf-8').send(format === 'srt' ? toSrt(segments) : toVtt(segments));
      return;
    }
    if (format === 'verbose_json') {
      res.json({ task: 'transcribe', language: result.language, duration: result.duration, text: result.text, segments });
      return;
    }
    res.json({ text: result.text });
  }

  @Post('speech/synthesize')
  @HttpCode(200)
  @ApiOperation({
    summary: 'Synthesize speech',
    description: 'eSpeak NG in-process (Mandarin `cmn`, English `en-us`; an optional GPL-3.0 package, 503 when absent). Answers the audio bytes: audio/mpeg, audio/wav or audio/ogg. 0.01 yuan per thousand characters.',
  })
  @ApiProduces('audio/mpeg', 'audio/wav', 'audio/ogg')
  @ApiBody({ type: SynthesizeRequest, examples: { chinese: { value: { text: '你好，欢迎使用语音合成服务。', voice: 'zh-CN-XiaoxiaoNeural', format: 'mp3', speed: 1 } }, english: { value: { text: 'Hello there.', voice: 'en-US-GuyNeural', format: 'wav' } } } })
  @ApiOkResponse({ description: 'The audio', schema: { type: 'string', format: 'binary' } })
  @ApiOpenAiErrors(400, 401, 403, 429, 503)
  async synthesize(@CurrentPrincipal() principal: Principal, @Body() body: SynthesizeRequest, @Req() req: Request, @Res() res: Response): Promise<void> {
    assertScope(principal, 'speech');
    const speech = await this.synthesizeSpeech.synthesize(principal, body, requestIdOf(req), requestSignal(req));
    res.setHeader('Content-Type', speech.contentType).setHeader('Content-Length', String(speech.audio.length));
    res.setHeader('X-Audio-Duration', speech.duration.toFixed(3));
    res.end(speech.audio);
  }

  @Post('audio/speech')
  @HttpCode(200)
  @ApiOperation({ summary: 'Synthesize speech (OpenAI-compatible alias)', description: 'OpenAI voices map to the local voices (README table: alloy, coral, nova, sage, shimmer, marin -> en-US-JennyNeural; ash, ballad, echo, fable, onyx, verse, cedar -> en-US-GuyNeural); contract voice ids work too. Formats mp3, opus, aac, flac, wav, pcm.' })
  @ApiProduces('audio/mpeg', 'audio/ogg', 'audio/aac', 'audio/flac', 'audio/wav', 'audio/pcm')
  @ApiOkResponse({ description: 'The audio', schema: { type: 'string', format: 'binary' } })
  @ApiOpenAiErrors(400, 401, 403, 429, 503)
  async openAiSpeech(@CurrentPrincipal() principal: Principal, @Body() body: OpenAiSpeechRequest, @Req() req: Request, @Res() res: Response): Promise<void> {
    assertScope(principal, 'speech');
    const voice = OPENAI_VOICES[body.voice] ?? body.voice;
    const speech = await this.synthesizeSpeech.synthesize(principal, { text: body.input, voice, format: (body.response_format ?? 'mp3') as SpeechFormat, speed: body.speed }, requestIdOf(req), requestSignal(req));
    res.setHeader('Content-Type', speech.contentType).setHeader('Content-Length', String(speech.audio.length));
    res.end(speech.audio);
  }
}
