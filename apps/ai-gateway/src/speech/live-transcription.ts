import type { Principal } from '@app/auth';
import { GatewayError, GatewayErrorCode } from '../errors';
import type { EngineCallOptions } from '@app/engines';
import { GatewayConfig } from '../config/gateway.config';
import { assertScope } from '../keys/key-scopes';
import { MeteringService, Reservation } from '../usage/metering.service';
import { MEDIA_PRICES, transcriptionCost } from '../vision/media-prices';
import { EngineTranscript, TranscriptionEngines } from './transcription-engines';

/** An open live session: what it may receive and the one reservation that pays for it. */
export interface LiveSession {
  maxSeconds: number;
  reservation: Reservation;
}

/**
 * The use case of /v1/speech/stream without the socket: opening a session for a key (scope, engine,
 * one reservation sized by the budget), transcribing its segments, and billing the seconds received.
 * The socket, its messages, timers and back-pressure stay in speech-stream.gateway.ts.
 */
export class LiveTranscription {
  constructor(
    private readonly config: GatewayConfig,
    private readonly metering: MeteringService,
    private readonly engines: TranscriptionEngines,
  ) {}

  /**
   * One reservation for the session, capped by AI_STREAM_MAX_SECONDS and by what the budget can pay;
   * the session stops there. `alive` tells the admission whether the session still holds its lease.
   */
  async open(principal: Principal, language: string | undefined, alive: () => boolean): Promise<LiveSession> {
    assertScope(principal, 'speech');
    this.engines.check(language);
    const remaining = await this.metering.remaining(principal);
    const perSecond = MEDIA_PRICES.liveSpeechRecognitionPerMinute / 60;
    const affordable = remaining.exhausted
      ? 0
      : remaining.yuan === null
        ? Infinity
        : Math.floor(remaining.yuan / perSecond);
    const maxSeconds = Math.min(this.config.AI_STREAM_MAX_SECONDS, affordable);
    if (maxSeconds < 1) throw new GatewayError(GatewayErrorCode.InsufficientQuota);
    const reservation = await this.metering.reserve(principal, {
      model: 'speech-stream',
      yuan: transcriptionCost(maxSeconds, true),
      alive,
    });
    return { maxSeconds, reservation };
  }

  /** One segment's text, counted against the key's share of the shared engine limiter (`call.key`). */
  transcribe(pcm: Int16Array, language: string | undefined, call: EngineCallOptions): Promise<EngineTranscript> {
    return this.engines.transcribePcm(pcm, language, call);
  }

  /** The bill: the seconds of audio received (MeteringService.settle runs once per reservation). */
  async settle(reservation: Reservation, receivedSeconds: number, requestId: string | undefined): Promise<void> {
    await this.metering.settle(reservation, {
      endpoint: '/v1/speech/stream',
      model: this.config.AI_TRANSCRIBE_BASE_URL ? this.config.AI_TRANSCRIBE_MODEL : 'pocketsphinx-en',
      status: 'ok',
      costYuan: transcriptionCost(receivedSeconds, true),
      seconds: receivedSeconds,
      httpStatus: 101,
      requestId: requestId ?? null,
    });
  }
}
