import { decodeAudio } from '../audio/audio-codec';
import { EngineInputError, EngineUnavailableError } from '../engine-worker';
import { SpeechSynthesisEngine, VOICES } from './speech-synthesis.engine';

function rms(pcm: Int16Array): number {
  let sum = 0;
  for (const s of pcm) sum += s * s;
  return Math.sqrt(sum / Math.max(1, pcm.length));
}

describe('SpeechSynthesisEngine (eSpeak NG WASM, real synthesis)', () => {
  const engine = SpeechSynthesisEngine.shared();
  afterAll(() => engine.close());

  it('is installed here (optional dependency present)', () => {
    expect(engine.installed).toBe(true);
  });

  it('says it is unavailable (not a silent fallback) when the optional package is absent', async () => {
    const absent = new SpeechSynthesisEngine('@echogarden/espeak-ng-emscripten-not-installed');
    expect(absent.installed).toBe(false);
    await expect(absent.synthesize('hello')).rejects.toBeInstanceOf(EngineUnavailableError);
  });

  it('speaks Chinese as WAV with a correct header and audible samples', async () => {
    const started = Date.now();
    const speech = await engine.synthesize('你好，欢迎使用语音合成服务。', {
      voice: 'zh-CN-XiaoxiaoNeural',
      format: 'wav',
    });
    const firstMs = Date.now() - started;
    expect(speech.contentType).toBe('audio/wav');
    expect(speech.audio.subarray(0, 4).toString('ascii')).toBe('RIFF');
    expect(speech.audio.readUInt32LE(24)).toBe(speech.sampleRate);
    expect(speech.duration).toBeGreaterThan(1.5);
    expect(speech.duration).toBeLessThan(8);
    const decoded = await decodeAudio(speech.audio, { sampleRate: speech.sampleRate });
    expect(decoded.container).toBe('wav');
    expect(decoded.duration).toBeCloseTo(speech.duration, 2);
    expect(rms(decoded.pcm)).toBeGreaterThan(300);
    const again = Date.now();
    await engine.synthesize('Hello there.', { voice: 'en-US-GuyNeural', format: 'wav' });
    console.log(`tts: first call (with load) ${firstMs} ms, warm wav call ${Date.now() - again} ms`);
  });

  it('encodes MP3 and Ogg that decode back to the same length', async () => {
    for (const format of ['mp3', 'ogg'] as const) {
      const started = Date.now();
      const speech = await engine.synthesize('The quick brown fox jumps over the lazy dog.', {
        voice: 'en-US-JennyNeural',
        format,
      });
      const ms = Date.now() - started;
      expect(speech.contentType).toBe(format === 'mp3' ? 'audio/mpeg' : 'audio/ogg');
      const decoded = await decodeAudio(speech.audio);
      expect(decoded.container).toBe(format);
      // Encoder padding adds at most a few tens of milliseconds.
      expect(Math.abs(decoded.duration - speech.duration)).toBeLessThan(0.15);
      expect(rms(decoded.pcm)).toBeGreaterThan(300);
      console.log(`tts: ${format} ${speech.duration.toFixed(2)} s of speech in ${ms} ms, ${speech.audio.length} bytes`);
    }
  });

  it('also encodes the OpenAI alias formats: opus, flac, aac and raw 24 kHz pcm', async () => {
    const text = 'Extra formats for the OpenAI speech alias.';
    const expected: Record<string, string> = { opus: 'ogg', flac: 'flac', aac: 'aac' };
    for (const format of ['opus', 'flac', 'aac'] as const) {
      const speech = await engine.synthesize(text, { voice: 'en-US-GuyNeural', format });
      const decoded = await decodeAudio(speech.audio, { keepPcm: false });
      expect([format, decoded.container, Math.abs(decoded.duration - speech.duration) < 0.15]).toEqual([
        format,
        expected[format],
        true,
      ]);
    }
    const pcm = await engine.synthesize(text, { voice: 'en-US-GuyNeural', format: 'pcm' });
    expect(Math.abs(pcm.audio.length / 2 / 24_000 - pcm.duration)).toBeLessThan(0.01);
  });

  it('speed changes the length, voices change the sound', async () => {
    const text = 'Speed test sentence with several words in it.';
    const normal = await engine.synthesize(text, { voice: 'en-US-GuyNeural', format: 'wav', speed: 1 });
    const fast = await engine.synthesize(text, { voice: 'en-US-GuyNeural', format: 'wav', speed: 2 });
    const slow = await engine.synthesize(text, { voice: 'en-US-GuyNeural', format: 'wav', speed: 0.5 });
    expect(fast.duration).toBeLessThan(normal.duration * 0.7);
    expect(slow.duration).toBeGreaterThan(normal.duration * 1.5);
    const female = await engine.synthesize(text, { voice: 'en-US-JennyNeural', format: 'wav' });
    expect(female.audio.equals(normal.audio)).toBe(false);
    expect(Object.keys(VOICES)).toHaveLength(5);
  });

  it('rejects unknown voices, bad speed, empty text and unknown formats', async () => {
    await expect(engine.synthesize('hi', { voice: 'xx-Nobody' })).rejects.toBeInstanceOf(EngineInputError);
    await expect(engine.synthesize('hi', { speed: 2.5 })).rejects.toBeInstanceOf(EngineInputError);
    await expect(engine.synthesize('   ')).rejects.toBeInstanceOf(EngineInputError);
    await expect(engine.synthesize('hi', { format: 'aiff' as never })).rejects.toBeInstanceOf(EngineInputError);
  });

  it('refuses a voice or format named like an Object.prototype member as unknown (not a crash in the encoder)', async () => {
    for (const name of ['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf']) {
      await expect(engine.synthesize('hi', { voice: name })).rejects.toThrow(
        new EngineInputError(`unknown voice ${name}`),
      );
      await expect(engine.synthesize('hi', { format: name as never })).rejects.toThrow(
        new EngineInputError(`unsupported format ${name}`),
      );
    }
  });
});
