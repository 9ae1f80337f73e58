import { Injectable } from '@nestjs/common';
import type { Principal } from '@app/auth';
import { GatewayError, GatewayErrorCode } from '../errors';
import { decodeAudio, STT_SAMPLE_RATE } from '@app/engines';
import { GatewayConfig } from '../config/gateway.config';
import { MeteringService, Reservation } from '../usage/metering.service';
import { toMediaError } from '../vision/media-errors';
import { transcriptionCost } from '../vision/media-prices';
import type { MediaEventStream } from '../vision/media-event-stream';
import { TranscribeResponse } from './dtos/speech.dto';
import { localCannot, TranscriptionEngines, TranscriptionPassthrough } from './transcription-engines';
import type { MediaModelInfo } from '@app/llm';

export interface UploadedAudio {
  buffer: Buffer;
  originalname?: string;
  size: number;
}

interface AudioOptions {
  language?: string;
  timestamps?: boolean;
  model?: MediaModelInfo;
  passthrough?: TranscriptionPassthrough;
  localCheck?: () => void;
}

/** A call ready to go: the audio measured, its cost reserved. */
interface PreparedAudio {
  bytes: Buffer;
  filename: string;
  pcm: Int16Array;
  duration: number;
  cost: number;
  reservation: Reservation;
  upstreamModel: string;
  outcome: { endpoint: string; model: string; requestId?: string };
}

/** A whole audio file to text (or English text), billed per minute of audio measured from its decoded samples. */
@Injectable()
export class TranscribeAudioService {
  constructor(
    private readonly config: GatewayConfig,
    private readonly engines: TranscriptionEngines,
    private readonly metering: MeteringService,
  ) {}

  /**
   * `signal` aborts when the client leaves: ffmpeg and the engine's child process are killed.
   * `model`: the caller's model from the media catalog (its upstream name and per-minute price); none
   * means AI_TRANSCRIBE_MODEL at the contract price. `passthrough` (the OpenAI alias): an upstream gets
   * the caller's output fields and its answer is returned as `raw`; the local engine makes the formats
   * itself (`localCheck` refuses, before any work or charge, what it cannot make).
   */
  async transcribe(
    principal: Principal,
    file: UploadedAudio | undefined,
    opts: AudioOptions,
    requestId?: string,
    signal?: AbortSignal,
  ): Promise<TranscribeResponse & { raw?: { body: Buffer; contentType: string } }> {
    requireFile(file);
    const { needsPcm } = this.engines.check(opts.language);
    if (!this.engines.upstreamServes) opts.localCheck?.();
    const p = await this.prepare(principal, file, opts, needsPcm, '/v1/speech/transcribe', requestId, signal);
    try {
      const result = await this.engines.transcribeFile(
        { bytes: p.bytes, filename: p.filename, pcm: p.pcm },
        opts.language,
        { key: principal.id, signal },
        p.upstreamModel,
        opts.passthrough,
      );
      await this.metering.settle(p.reservation, {
        ...p.outcome,
        provider: result.provider,
        status: 'ok',
        costYuan: p.cost,
        seconds: p.duration,
        httpStatus: 200,
      });
      return {
        text: result.text,
        language: opts.language ?? result.language,
        duration: p.duration,
        segments: opts.timestamps ? result.segments : [],
        raw: result.raw,
      };
    } catch (e) {
      throw await this.fail(p, e);
    }
  }

  /**
   * `/v1/audio/translations`: the upstream only (the local engine cannot translate: a 400 before any
   * work or charge), billed per minute like a transcription, its answer returned as it is.
   */
  async translate(
    principal: Principal,
    file: UploadedAudio | undefined,
    opts: AudioOptions & { passthrough: TranscriptionPassthrough },
    requestId?: string,
    signal?: AbortSignal,
  ): Promise<{ body: Buffer; contentType: string }> {
    requireFile(file);
    this.engines.check(undefined);
    if (!this.engines.upstreamServes) {
      throw localCannot(
        'translation into English needs the transcription upstream (AI_TRANSCRIBE_BASE_URL); the local PocketSphinx engine only transcribes English speech',
        'model',
      );
    }
    const p = await this.prepare(principal, file, opts, false, '/v1/audio/translations', requestId, signal);
    try {
      const raw = await this.engines.translateFile(
        { bytes: p.bytes, filename: p.filename },
        p.upstreamModel,
        opts.passthrough,
        signal,
      );
      await this.metering.settle(p.reservation, {
        ...p.outcome,
        provider: 'upstream',
        status: 'ok',
        costYuan: p.cost,
        seconds: p.duration,
        httpStatus: 200,
      });
      return raw;
    } catch (e) {
      throw await this.fail(p, e);
    }
  }

  /**
   * `stream=true`: the transcript.text.delta / .done events, to be sent as server-sent events. The cost
   * is known from the audio's duration and reserved before; the stream's settlement releases it when the
   * stream fails and charges it otherwise (a client that left was sent the audio's transcription).
   */
  async transcribeStream(
    principal: Principal,
    file: UploadedAudio | undefined,
    opts: AudioOptions & { passthrough: TranscriptionPassthrough },
    requestId?: string,
    signal?: AbortSignal,
  ): Promise<MediaEventStream> {
    requireFile(file);
    const { needsPcm } = this.engines.check(opts.language);
    if (!this.engines.upstreamServes) opts.localCheck?.();
    const p = await this.prepare(principal, file, opts, needsPcm, '/v1/speech/transcribe', requestId, signal);
    let events: AsyncIterable<Record<string, unknown>>;
    try {
      events = await this.engines.transcribeStream(
        { bytes: p.bytes, filename: p.filename, pcm: p.pcm },
        opts.language,
        { key: principal.id, signal },
        p.upstreamModel,
        opts.passthrough,
      );
    } catch (e) {
      throw await this.fail(p, e);
    }
    const provider = this.engines.upstreamServes ? 'upstream' : 'pocketsphinx';
    return {
      events,
      settle: (status, error) =>
        this.metering.settle(p.reservation, {
          ...p.outcome,
          provider,
          status,
          costYuan: status === 'failed' ? 0 : p.cost,
          seconds: p.duration,
          httpStatus: 200,
          error: error?.message,
        }),
    };
  }

  private async prepare(
    principal: Principal,
    file: UploadedAudio,
    opts: AudioOptions,
    needsPcm: boolean,
    endpoint: string,
    requestId?: string,
    signal?: AbortSignal,
  ): Promise<PreparedAudio> {
    requireFile(file);
    let decoded;
    try {
      decoded = await decodeAudio(file.buffer, {
        sampleRate: STT_SAMPLE_RATE,
        keepPcm: needsPcm,
        maxSeconds: this.config.AI_MEDIA_MAX_AUDIO_SECONDS,
        key: principal.id,
        signal,
      });
    } catch (e) {
      throw toMediaError(e, 'file');
    }
    const duration = Math.round(decoded.duration * 1000) / 1000;
    const cost = transcriptionCost(duration, false, opts.model?.price);
    const reservation = await this.metering.reserve(principal, {
      model: opts.model?.name ?? this.config.AI_TRANSCRIBE_MODEL,
      yuan: cost,
    });
    const upstreamModel = opts.model?.upstream ?? this.config.AI_TRANSCRIBE_MODEL;
    const filename =
      file.originalname && /^[\w.-]{1,100}$/.test(file.originalname) ? file.originalname : `audio.${decoded.container}`;
    return {
      bytes: file.buffer,
      filename,
      pcm: decoded.pcm,
      duration,
      cost,
      reservation,
      upstreamModel,
      outcome: {
        endpoint,
        model: this.config.AI_TRANSCRIBE_BASE_URL ? (opts.model?.name ?? upstreamModel) : 'pocketsphinx-en',
        requestId,
      },
    };
  }

  /** Settles a failed call (nothing charged) and returns the catalog error to throw. */
  private async fail(p: PreparedAudio, e: unknown): Promise<unknown> {
    const error = toMediaError(e, 'file');
    await this.metering.settle(p.reservation, {
      ...p.outcome,
      status: 'failed',
      costYuan: 0,
      seconds: p.duration,
      httpStatus: (error as GatewayError).getStatus?.() ?? 500,
      error: (e as Error).message,
    });
    return error;
  }
}

function requireFile(file: UploadedAudio | undefined): asserts file is UploadedAudio {
  if (!file || !file.buffer?.length) throw new GatewayError(GatewayErrorCode.MissingFile);
}
