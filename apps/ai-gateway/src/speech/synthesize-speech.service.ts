import { Injectable } from '@nestjs/common';
import type { Principal } from '@app/auth';
import { GatewayError, GatewayErrorCode } from '../errors';
import { SpeechFormat, SpeechStream, SpeechSynthesisEngine } from '@app/engines';
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

  /**
   * The answer as it is made. Returns once its first chunk is ready, so a refusal (limits, engine, input)
   * is still an error status; the rest comes segment by segment (SpeechSynthesisEngine.stream). Settled
   * when its chunks end: `ok` at the price of the text; `aborted` (the client left, or stopped reading) at
   * the price of the characters spoken; `failed` (the engine, before the first chunk or midway) at no cost,
   * as a failed chat stream.
   */
  async stream(
    principal: Principal,
    input: SpeechInput,
    requestId?: string,
    signal?: AbortSignal,
  ): Promise<SpeechStream> {
    const engine = SpeechSynthesisEngine.shared();
    if (!this.config.AI_LOCAL_ENGINES)
      throw new GatewayError(GatewayErrorCode.LocalEnginesDisabled, { feature: 'Speech synthesis' });
    if (!engine.installed) throw new GatewayError(GatewayErrorCode.SpeechSynthesisNotInstalled);
    const characters = [...input.text].length;
    const cost = synthesisCost(characters);
    const reservation = await this.metering.reserve(principal, { model: 'espeak-ng', yuan: cost });
    const outcome = { endpoint: '/v1/speech/synthesize', model: 'espeak-ng', provider: 'local', requestId };
    let speech: SpeechStream;
    let source: AsyncIterator<Buffer>;
    let first: IteratorResult<Buffer>;
    try {
      speech = engine.stream(input.text, {
        voice: input.voice,
        format: input.format ?? 'mp3',
        speed: input.speed ?? 1,
        key: principal.id,
        signal,
      });
      source = speech.chunks[Symbol.asyncIterator]();
      first = await source.next();
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
    const metering = this.metering;
    const spoken = speech.spoken;
    async function* chunks(): AsyncGenerator<Buffer> {
      let status: 'ok' | 'failed' | 'aborted' = 'aborted';
      let failure: Error | undefined;
      try {
        for (let next = first; !next.done; next = await source.next()) yield next.value;
        status = 'ok';
      } catch (e) {
        failure = e as Error;
        status = signal?.aborted ? 'aborted' : 'failed';
      } finally {
        // Stopped early (the transport destroyed, the client gone): the engine stops within a segment.
        if (status === 'aborted' && !failure) await source.return?.();
        await metering.settle(reservation, {
          ...outcome,
          status,
          costYuan: status === 'ok' ? cost : status === 'aborted' ? synthesisCost(spoken.characters) : 0,
          characters: status === 'ok' ? characters : spoken.characters,
          seconds: Math.round(spoken.seconds * 1000) / 1000,
          httpStatus: 200,
          ...(failure ? { error: failure.message } : {}),
        });
      }
      if (failure) throw toMediaError(failure, 'text');
    }
    return { ...speech, chunks: chunks(), spoken };
  }
}

export interface SpeechInput {
  text: string;
  voice?: string;
  format?: SpeechFormat;
  speed?: number;
}
