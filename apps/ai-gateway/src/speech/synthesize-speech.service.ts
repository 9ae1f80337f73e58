import { Injectable } from '@nestjs/common';
import type { Principal } from '@app/auth';
import { GatewayError, GatewayErrorCode } from '../errors';
import { SpeechFormat, SpeechSynthesisEngine, SynthesizedSpeech } from '@app/engines';
import { GatewayConfig } from '../config/gateway.config';
import { MeteringService } from '../usage/metering.service';
import { toMediaError } from '../vision/media-errors';
import { EngineLimits } from '../vision/engine-limits';
import { synthesisCost } from '../vision/media-prices';

/** Text to speech with the in-process eSpeak NG engine, billed per thousand characters. */
@Injectable()
export class SynthesizeSpeechService {
  constructor(
    private readonly config: GatewayConfig,
    private readonly metering: MeteringService,
    readonly limits: EngineLimits,
  ) {}

  async synthesize(
    principal: Principal,
    input: { text: string; voice?: string; format?: SpeechFormat; speed?: number },
    requestId?: string,
    signal?: AbortSignal,
  ): Promise<SynthesizedSpeech> {
    const engine = SpeechSynthesisEngine.shared();
    if (!this.config.AI_LOCAL_ENGINES)
      throw new GatewayError(GatewayErrorCode.LocalEnginesDisabled, { feature: 'Speech synthesis' });
    if (!engine.installed) throw new GatewayError(GatewayErrorCode.SpeechSynthesisNotInstalled);
    const characters = [...input.text].length;
    const cost = synthesisCost(characters);
    const reservation = await this.metering.reserve(principal, { model: 'espeak-ng', yuan: cost });
    const outcome = { endpoint: '/v1/speech/synthesize', model: 'espeak-ng', provider: 'local', requestId };
    try {
      const speech = await engine.synthesize(input.text, {
        voice: input.voice,
        format: input.format ?? 'mp3',
        speed: input.speed ?? 1,
        key: principal.id,
        signal,
      });
      await this.metering.settle(reservation, {
        ...outcome,
        status: 'ok',
        costYuan: cost,
        characters,
        seconds: Math.round(speech.duration * 1000) / 1000,
        httpStatus: 200,
      });
      return speech;
    } catch (e) {
      const error = toMediaError(e, 'text');
      await this.metering.settle(reservation, {
        ...outcome,
        status: 'failed',
        costYuan: 0,
        characters,
        httpStatus: (error as GatewayError).getStatus?.() ?? 500,
        error: (e as Error).message,
      });
      throw error;
    }
  }
}
