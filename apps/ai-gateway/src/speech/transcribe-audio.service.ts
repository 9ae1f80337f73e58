import { Injectable } from '@nestjs/common';
import type { Principal } from '@app/auth';
import { GatewayError, GatewayErrorCode } from '@app/envelope';
import { decodeAudio, STT_SAMPLE_RATE } from '@app/engines';
import { GatewayConfig } from '../config/gateway.config';
import { MeteringService } from '../usage/metering.service';
import { toMediaError } from '../vision/media-errors';
import { transcriptionCost } from '../vision/media-prices';
import { TranscribeResponse } from './dtos/speech.dto';
import { TranscriptionEngines, TranscriptionPassthrough } from './transcription-engines';
import type { MediaModelInfo } from '@app/llm';

export interface UploadedAudio {
  buffer: Buffer;
  originalname?: string;
  size: number;
}

/** A whole audio file to text, billed per minute of audio measured from its decoded samples. */
@Injectable()
export class TranscribeAudioService {
  constructor(
    private readonly config: GatewayConfig,
    private readonly engines: TranscriptionEngines,
    private readonly metering: MeteringService,
  ) {}

  /** `signal` aborts when the client leaves: ffmpeg and the engine's child process are killed. */
  /**
   * `model`: the caller's model from the media catalog (its upstream name and per-minute price); none
   * means AI_TRANSCRIBE_MODEL at the contract price. `passthrough` (the OpenAI alias): an upstream gets
   * the caller's output fields and its answer is returned as `raw`; the local engine makes the formats
   * itself (`localCheck` refuses, before any work or charge, what it cannot make).
   */
  async transcribe(
    principal: Principal,
    file: UploadedAudio | undefined,
    opts: { language?: string; timestamps?: boolean; model?: MediaModelInfo; passthrough?: TranscriptionPassthrough; localCheck?: () => void },
    requestId?: string,
    signal?: AbortSignal,
  ): Promise<TranscribeResponse & { raw?: { body: Buffer; contentType: string } }> {
    if (!file || !file.buffer?.length) throw new GatewayError(GatewayErrorCode.MissingFile);
    const { needsPcm } = this.engines.check(opts.language);
    if (!this.engines.upstreamServes) opts.localCheck?.();
    const call = { key: principal.id, signal };
    let decoded;
    try {
      decoded = await decodeAudio(file.buffer, { sampleRate: STT_SAMPLE_RATE, keepPcm: needsPcm, maxSeconds: this.config.AI_MEDIA_MAX_AUDIO_SECONDS, ...call });
    } catch (e) {
      throw toMediaError(e, 'file');
    }
    const duration = Math.round(decoded.duration * 1000) / 1000;
    const cost = transcriptionCost(duration, false, opts.model?.price);
    const reservation = await this.metering.reserve(principal, cost);
    const upstreamModel = opts.model?.upstream ?? this.config.AI_TRANSCRIBE_MODEL;
    const outcome = { endpoint: '/v1/speech/transcribe', model: this.config.AI_TRANSCRIBE_BASE_URL ? (opts.model?.name ?? upstreamModel) : 'pocketsphinx-en', requestId };
    try {
      const filename = file.originalname && /^[\w.-]{1,100}$/.test(file.originalname) ? file.originalname : `audio.${decoded.container}`;
      const result = await this.engines.transcribeFile({ bytes: file.buffer, filename, pcm: decoded.pcm }, opts.language, call, upstreamModel, opts.passthrough);
      await this.metering.settle(reservation, { ...outcome, provider: result.provider, status: 'ok', costYuan: cost, seconds: duration, httpStatus: 200 });
      return {
        text: result.text,
        language: opts.language ?? result.language,
        duration,
        segments: opts.timestamps ? result.segments : [],
        raw: result.raw,
      };
    } catch (e) {
      const error = toMediaError(e, 'file');
      await this.metering.settle(reservation, { ...outcome, status: 'failed', costYuan: 0, seconds: duration, httpStatus: (error as GatewayError).getStatus?.() ?? 500, error: (e as Error).message });
      throw error;
    }
  }
}
