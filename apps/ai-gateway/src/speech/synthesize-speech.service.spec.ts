import { SpeechSynthesisEngine } from '@app/engines';
import { GatewayError, GatewayErrorCode } from '../errors';
import { GatewayConfig } from '../config/gateway.config';
import type { CallHold, CallOutcome } from '../usage/metering.service';
import { EngineLimits } from '../vision/engine-limits';
import { synthesisCost } from '../vision/media-prices';
import { SynthesizeSpeechService } from './synthesize-speech.service';
import { keyPrincipal } from '../../../../test/ai-gateway/use-case-fixtures';

// The use case with the real eSpeak NG engine (WASM, loaded in about a second, as
// libs/engines/src/tts/speech-synthesis.engine.spec.ts does) and an in-memory ledger: its answer is a value.
describe('SynthesizeSpeechService', () => {
  const engine = SpeechSynthesisEngine.shared();
  let held: CallHold[];
  let settled: CallOutcome[];
  const service = (config: Partial<GatewayConfig> = {}, reserve?: () => Promise<unknown>) => {
    const gateway = Object.assign(new GatewayConfig(), config);
    const metering = {
      reserve: reserve ?? (async (_p: unknown, hold: CallHold) => (held.push(hold), { keyId: 'k1' })),
      settle: async (_r: unknown, outcome: CallOutcome) => void settled.push(outcome),
    };
    return new SynthesizeSpeechService(gateway, metering as never, new EngineLimits(gateway));
  };

  beforeEach(() => {
    held = [];
    settled = [];
  });
  afterEach(() => jest.restoreAllMocks());
  afterAll(() => engine.close());

  it('answers the speech in the asked format, reserved and settled at the price of its characters, counted as code points', async () => {
    // Five code points, six UTF-16 units: the price is per character as a reader counts them.
    const text = 'Hi 👋!';
    const speech = await service().synthesize(
      keyPrincipal,
      { text, voice: 'en-US-GuyNeural', format: 'wav' },
      'req-tts',
    );
    expect(speech).toMatchObject({ format: 'wav', contentType: 'audio/wav' });
    expect(speech.audio.subarray(0, 4).toString('ascii')).toBe('RIFF');
    expect(speech.duration).toBeGreaterThan(0);
    const cost = synthesisCost(5);
    expect(held).toEqual([{ model: 'espeak-ng', yuan: cost }]);
    expect(settled).toEqual([
      {
        endpoint: '/v1/speech/synthesize',
        model: 'espeak-ng',
        provider: 'local',
        requestId: 'req-tts',
        status: 'ok',
        costYuan: cost,
        characters: 5,
        seconds: Math.round(speech.duration * 1000) / 1000,
        httpStatus: 200,
      },
    ]);
  });

  it('refuses when local engines are off, and when eSpeak NG is not installed, before anything is reserved', async () => {
    await expect(
      service({ AI_LOCAL_ENGINES: false }).synthesize(keyPrincipal, { text: 'hello' }),
    ).rejects.toMatchObject({ code: GatewayErrorCode.LocalEnginesDisabled });
    // The engine as it is without its optional package (the seam speech-synthesis.engine.spec.ts uses).
    jest
      .spyOn(SpeechSynthesisEngine, 'shared')
      .mockReturnValue(new SpeechSynthesisEngine('@echogarden/espeak-ng-emscripten-not-installed'));
    await expect(service().synthesize(keyPrincipal, { text: 'hello' })).rejects.toMatchObject({
      code: GatewayErrorCode.SpeechSynthesisNotInstalled,
    });
    expect([held, settled]).toEqual([[], []]);
  });

  it('a reservation refused (budget or limits) is answered as it came, and nothing is synthesized or settled', async () => {
    const synthesize = jest.spyOn(engine, 'synthesize');
    const refusal = new GatewayError(GatewayErrorCode.InsufficientQuota);
    const poor = service({}, async () => Promise.reject(refusal));
    await expect(poor.synthesize(keyPrincipal, { text: 'hello' })).rejects.toBe(refusal);
    expect(synthesize).not.toHaveBeenCalled();
    expect(settled).toEqual([]);
  });

  it("settles an engine refusal as failed at no cost and answers it as the input's 400", async () => {
    const error = await service()
      .synthesize(keyPrincipal, { text: 'hello', voice: 'xx-Nobody' }, 'req-bad')
      .catch((e) => e);
    expect(error).toMatchObject({ code: GatewayErrorCode.InvalidMediaInput, status: 400, param: 'text' });
    expect(settled).toEqual([
      expect.objectContaining({
        status: 'failed',
        costYuan: 0,
        characters: 5,
        httpStatus: 400,
        error: 'unknown voice xx-Nobody',
        requestId: 'req-bad',
      }),
    ]);
  });

  it('a client gone before the engine ran is answered client_closed_request and settled as failed', async () => {
    const gone = new AbortController();
    gone.abort();
    const error = await service()
      .synthesize(keyPrincipal, { text: 'hello', format: 'wav' }, 'req-gone', gone.signal)
      .catch((e) => e);
    expect(error).toMatchObject({ code: GatewayErrorCode.ClientClosedRequest });
    expect(settled).toEqual([expect.objectContaining({ status: 'failed', costYuan: 0, httpStatus: 400 })]);
  });
});
