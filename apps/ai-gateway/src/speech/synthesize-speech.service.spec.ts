import { collectSpeech, SpeechSynthesisEngine } from '@app/engines';
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
    const speech = await collectSpeech(
      await service().stream(keyPrincipal, { text, voice: 'en-US-GuyNeural', format: 'wav' }, 'req-tts'),
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
    await expect(service({ AI_LOCAL_ENGINES: false }).stream(keyPrincipal, { text: 'hello' })).rejects.toMatchObject({
      code: GatewayErrorCode.LocalEnginesDisabled,
    });
    // The engine as it is without its optional package (the seam speech-synthesis.engine.spec.ts uses).
    jest
      .spyOn(SpeechSynthesisEngine, 'shared')
      .mockReturnValue(new SpeechSynthesisEngine('@echogarden/espeak-ng-emscripten-not-installed'));
    await expect(service().stream(keyPrincipal, { text: 'hello' })).rejects.toMatchObject({
      code: GatewayErrorCode.SpeechSynthesisNotInstalled,
    });
    expect([held, settled]).toEqual([[], []]);
  });

  it('a reservation refused (budget or limits) is answered as it came, and nothing is synthesized or settled', async () => {
    const synthesize = jest.spyOn(engine, 'stream');
    const refusal = new GatewayError(GatewayErrorCode.InsufficientQuota);
    const poor = service({}, async () => Promise.reject(refusal));
    await expect(poor.stream(keyPrincipal, { text: 'hello' })).rejects.toBe(refusal);
    expect(synthesize).not.toHaveBeenCalled();
    expect(settled).toEqual([]);
  });

  it("settles an engine refusal as failed at no cost and answers it as the input's 400", async () => {
    const error = await service()
      .stream(keyPrincipal, { text: 'hello', voice: 'xx-Nobody' }, 'req-bad')
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
      .stream(keyPrincipal, { text: 'hello', format: 'wav' }, 'req-gone', gone.signal)
      .catch((e) => e);
    expect(error).toMatchObject({ code: GatewayErrorCode.ClientClosedRequest });
    expect(settled).toEqual([expect.objectContaining({ status: 'failed', costYuan: 0, httpStatus: 400 })]);
  });

  it('streams a long text a segment at a time and settles it once, at the price of the text, after its last chunk', async () => {
    const text = 'The quick brown fox jumps over the lazy dog. '.repeat(12);
    const speech = await service().stream(keyPrincipal, { text, voice: 'en-US-GuyNeural', format: 'mp3' }, 'req-long');
    expect([speech.single, speech.segments > 1]).toEqual([false, true]);
    let chunks = 0;
    for await (const chunk of speech.chunks) {
      expect(settled).toEqual([]);
      expect(chunk.length).toBeGreaterThan(0);
      chunks++;
    }
    expect(chunks).toBe(speech.segments);
    expect(settled).toEqual([
      expect.objectContaining({ status: 'ok', costYuan: synthesisCost(text.length), characters: text.length }),
    ]);
  });

  it('a reader that stops after the first chunk settles the call as aborted, billed for what was spoken', async () => {
    const text = 'The quick brown fox jumps over the lazy dog. '.repeat(12);
    const speech = await service().stream(keyPrincipal, { text, voice: 'en-US-GuyNeural', format: 'mp3' }, 'req-left');
    for await (const chunk of speech.chunks) {
      expect(chunk.length).toBeGreaterThan(0);
      break;
    }
    const [outcome] = settled;
    expect(settled).toHaveLength(1);
    expect(outcome).toMatchObject({ status: 'aborted', requestId: 'req-left' });
    expect(outcome.characters).toBeGreaterThan(0);
    expect(outcome.characters).toBeLessThan(text.length / 2);
    expect(outcome.costYuan).toBe(synthesisCost(outcome.characters!));
  });

  it('an engine failure after the first chunk settles the call as failed, at no cost, and ends the stream with the error', async () => {
    async function* parts(): AsyncGenerator<Buffer> {
      spoken.characters += 160;
      yield Buffer.from('segment-1');
      throw new Error('worker exited');
    }
    const spoken = { characters: 0, seconds: 0, sampleRate: 22_050 };
    jest.spyOn(SpeechSynthesisEngine, 'shared').mockReturnValue({
      installed: true,
      stream: () => ({ contentType: 'audio/mpeg', format: 'mp3', segments: 3, single: false, chunks: parts(), spoken }),
    } as never);
    const speech = await service().stream(keyPrincipal, { text: 'x'.repeat(400) }, 'req-midway');
    const got: string[] = [];
    await expect(
      (async () => {
        for await (const chunk of speech.chunks) got.push(chunk.toString());
      })(),
    ).rejects.toThrow('worker exited');
    expect(got).toEqual(['segment-1']);
    expect(settled).toEqual([
      expect.objectContaining({ status: 'failed', costYuan: 0, characters: 160, error: 'worker exited' }),
    ]);
  });
});
