import { encodeWav } from '@app/engines';
import { GatewayError, GatewayErrorCode } from '../errors';
import { UpstreamError } from '@app/llm';
import { GatewayConfig } from '../config/gateway.config';
import { TranscribeAudioService } from './transcribe-audio.service';

describe('TranscribeAudioService.transcribeStream: events and settlement, no HTTP', () => {
  const config = Object.assign(new GatewayConfig(), {
    AI_TRANSCRIBE_BASE_URL: 'http://upstream.invalid/v1',
    AI_TRANSCRIBE_MODEL: 'whisper-1',
  });
  const principal = { id: 'key-1', kind: 'api-key', roles: [], claims: {} } as any;
  // Three seconds of audio: 3/60 of 0.02 yuan per minute (media-prices.ts).
  const file = { buffer: encodeWav(new Int16Array(48_000), 16_000), originalname: 'a.wav', size: 96_044 };
  const passthrough = { responseFormat: 'json' };
  const upstreamEvents = [
    { type: 'transcript.text.delta', delta: 'hello' },
    { type: 'transcript.text.done', text: 'hello' },
  ];

  const setup = (transcribeStream: () => Promise<AsyncIterable<Record<string, unknown>>>) => {
    const reserved: any[] = [];
    const settled: any[] = [];
    const metering = {
      reserve: async (_p: unknown, hold: unknown) => (reserved.push(hold), { hold }),
      settle: async (_r: unknown, outcome: unknown) => void settled.push(outcome),
    };
    const engines = { check: () => ({ needsPcm: false }), upstreamServes: true, transcribeStream };
    return { service: new TranscribeAudioService(config, engines as any, metering as any), reserved, settled };
  };
  const fromArray = async (events: Array<Record<string, unknown>>) =>
    (async function* () {
      yield* events;
    })();
  const collect = async (events: AsyncIterable<Record<string, unknown>>) => {
    const seen: unknown[] = [];
    for await (const e of events) seen.push(e);
    return seen;
  };

  it('reserves the measured duration, yields the upstream events as they are, and charges them when the stream ends', async () => {
    const { service, reserved, settled } = setup(() => fromArray(upstreamEvents));
    const stream = await service.transcribeStream(principal, file, { passthrough }, 'req-1');
    expect(reserved).toEqual([{ model: 'whisper-1', yuan: 0.001 }]);
    expect(await collect(stream.events)).toEqual(upstreamEvents);
    expect(settled).toEqual([]);
    await stream.settle('ok');
    expect(settled).toEqual([
      expect.objectContaining({
        endpoint: '/v1/speech/transcribe',
        model: 'whisper-1',
        provider: 'upstream',
        status: 'ok',
        costYuan: 0.001,
        seconds: 3,
        httpStatus: 200,
        requestId: 'req-1',
      }),
    ]);
  });

  it('charges a client that went away (the audio was sent and transcribed) and releases a failed stream', async () => {
    const left = setup(() => fromArray(upstreamEvents));
    await (await left.service.transcribeStream(principal, file, { passthrough })).settle('aborted');
    expect(left.settled).toEqual([expect.objectContaining({ status: 'aborted', costYuan: 0.001 })]);

    const failed = setup(() => fromArray(upstreamEvents));
    await (
      await failed.service.transcribeStream(principal, file, { passthrough })
    ).settle('failed', new Error('upstream cut the stream'));
    expect(failed.settled).toEqual([
      expect.objectContaining({ status: 'failed', costYuan: 0, error: 'upstream cut the stream' }),
    ]);
  });

  it('an upstream refusal before the first event is thrown as a catalog error, settled as failed', async () => {
    const { service, settled } = setup(async () => {
      throw new UpstreamError('overloaded', 'http', 503);
    });
    const error = await service.transcribeStream(principal, file, { passthrough }).then(
      () => null,
      (e) => e,
    );
    expect(error).toBeInstanceOf(GatewayError);
    expect(settled).toEqual([
      expect.objectContaining({ status: 'failed', costYuan: 0, httpStatus: error.getStatus() }),
    ]);
  });

  it('no file: missing_file before anything is reserved', async () => {
    const { service, reserved } = setup(() => fromArray(upstreamEvents));
    const error = await service.transcribeStream(principal, undefined, { passthrough }).then(
      () => null,
      (e) => e,
    );
    expect(error).toBeInstanceOf(GatewayError);
    expect(error.code).toBe(GatewayErrorCode.MissingFile);
    expect(reserved).toEqual([]);
  });
});
