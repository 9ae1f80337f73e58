import { decodeAudio } from '../audio/audio-codec';
import { EngineAbortedError, EngineLimiter } from '../engine-limiter';
import { EngineInputError, EngineUnavailableError, EngineWorker } from '../engine-worker';
import { collectSpeech, SEGMENT_CHARS, speechSegments, SpeechSynthesisEngine, VOICES } from './speech-synthesis.engine';

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

  describe('long texts, a segment at a time', () => {
    const long = 'The quick brown fox jumps over the lazy dog. '.repeat(20);
    afterEach(() => jest.restoreAllMocks());

    it('cuts after sentences, then clauses or spaces, never inside "3.14", and loses no text', () => {
      const chinese = '你好，欢迎使用语音合成服务。'.repeat(40);
      for (const text of [long, chinese, '字'.repeat(5000), 'Pi is 3.14 and more. '.repeat(30), 'a'.repeat(401)]) {
        const pieces = speechSegments(text);
        expect(pieces.join('').trim()).toBe(text.trim());
        for (const piece of pieces) expect(Array.from(piece).length).toBeLessThanOrEqual(SEGMENT_CHARS);
      }
      expect(
        speechSegments(chinese)
          .slice(0, -1)
          .every((p) => p.endsWith('。')),
      ).toBe(true);
      expect(
        speechSegments(long)
          .slice(0, -1)
          .every((p) => p.endsWith('.')),
      ).toBe(true);
      expect(speechSegments('Pi is 3.14 and more. '.repeat(30)).some((p) => /3\.$|^14/.test(p))).toBe(false);
      expect(speechSegments('a'.repeat(401)).map((p) => p.length)).toEqual([160, 160, 81]);
      expect(speechSegments('short text')).toEqual(['short text']);
    });

    it('speaks each segment as one worker call and joins them: an MP3 that decodes to the length spoken, a WAV with exact sizes', async () => {
      const calls = jest.spyOn(EngineWorker.prototype, 'call');
      const speech = engine.stream(long, { voice: 'en-US-GuyNeural', format: 'mp3' });
      expect(speech.segments).toBe(speechSegments(long).length);
      const whole = await collectSpeech(speech);
      expect(calls.mock.calls.filter(([method]) => method === 'synthesize')).toHaveLength(speech.segments);
      const decoded = await decodeAudio(whole.audio, { keepPcm: false });
      expect(decoded.container).toBe('mp3');
      expect(Math.abs(decoded.duration - whole.duration)).toBeLessThan(0.15);
      const wav = await engine.synthesize(long, { voice: 'en-US-GuyNeural', format: 'wav' });
      expect(wav.audio.readUInt32LE(40)).toBe(wav.audio.length - 44);
      expect(wav.audio.readUInt32LE(4)).toBe(wav.audio.length - 8);
      // Streamed, the header goes before the sizes are known.
      const streamed = engine.stream(long, { voice: 'en-US-GuyNeural', format: 'wav' });
      const reader = streamed.chunks[Symbol.asyncIterator]();
      const first = await reader.next();
      expect((first.value as Buffer).readUInt32LE(40)).toBe(0xffffffff);
      await reader.return?.();
    });

    it("another caller's short text is spoken between a long text's segments, not after all of them", async () => {
      const longSpeech = engine.stream(long, { voice: 'en-US-GuyNeural', format: 'mp3', key: 'long' });
      const reader = longSpeech.chunks[Symbol.asyncIterator]();
      await reader.next();
      const pending = (async () => {
        for (let r = await reader.next(); !r.done; r = await reader.next());
      })();
      await engine.synthesize('Hello.', { voice: 'en-US-GuyNeural', format: 'mp3', key: 'short' });
      const spokenWhenShortDone = longSpeech.spoken.characters;
      await pending;
      expect(spokenWhenShortDone).toBeLessThan(Array.from(long.trim()).length / 2);
    });

    it('a reader that stops, or a signal that aborts, ends the work within a segment', async () => {
      const calls = jest.spyOn(EngineWorker.prototype, 'call');
      const posts = jest.spyOn(EngineWorker.prototype, 'post');
      const openBefore = EngineLimiter.shared().stats.open;
      const speech = engine.stream(long, { voice: 'en-US-GuyNeural', format: 'mp3' });
      for await (const chunk of speech.chunks) {
        expect(chunk.length).toBeGreaterThan(0);
        break;
      }
      // The one read and the one being made when the reader stopped: its MP3 encoder freed in the worker, and
      // the answer no longer under way.
      expect(calls.mock.calls.map(([method]) => method)).toEqual(['synthesize', 'synthesize']);
      expect(speech.segments).toBeGreaterThan(2);
      expect(posts.mock.calls).toEqual([['endJob', [expect.any(Number)]]]);
      expect(EngineLimiter.shared().stats.open).toBe(openBefore);
      const leaving = new AbortController();
      const aborted = engine.stream(long, { voice: 'en-US-GuyNeural', format: 'wav', signal: leaving.signal });
      const reader = aborted.chunks[Symbol.asyncIterator]();
      await reader.next();
      leaving.abort();
      await expect(
        (async () => {
          for (let r = await reader.next(); !r.done; r = await reader.next());
        })(),
      ).rejects.toBeInstanceOf(EngineAbortedError);
      expect(aborted.spoken.characters).toBeLessThanOrEqual(2 * SEGMENT_CHARS);
    });

    it("opens each answer as engine work of several steps: past the key's share of them, a new one is refused before any work", async () => {
      const limiter = EngineLimiter.shared();
      const { maxConcurrentPerKey, maxQueuedPerKey } = limiter.current;
      const closes = Array.from({ length: maxConcurrentPerKey + maxQueuedPerKey }, () => limiter.openWork('busy-key'));
      const calls = jest.spyOn(EngineWorker.prototype, 'call');
      try {
        const speech = engine.stream(long, { voice: 'en-US-GuyNeural', format: 'mp3', key: 'busy-key' });
        await expect(speech.chunks[Symbol.asyncIterator]().next()).rejects.toMatchObject({ scope: 'key' });
        expect(calls).not.toHaveBeenCalled();
      } finally {
        for (const close of closes) close();
      }
    });
  });
});
