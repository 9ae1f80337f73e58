import { decodeAudio } from '../audio/audio-codec';
import { EngineAbortedError, EngineBusyError, EngineLimiter } from '../engine-limiter';
import { EngineUnavailableError } from '../engine-worker';
import { pidAlive, startFakeEngineBinary } from '../testing/fake-engine-binary';
import { SpeechSynthesisEngine } from '../tts/speech-synthesis.engine';
import { parseTimedOutput, PocketsphinxEngine, STT_SAMPLE_RATE } from './pocketsphinx.engine';

describe('PocketsphinxEngine', () => {
  const engine = PocketsphinxEngine.shared();
  const tts = SpeechSynthesisEngine.shared();
  afterAll(() => tts.close());

  it('parses timed output into utterance segments without fillers or alternates', () => {
    const out = [
      'hello world',
      '<s> 0.000 0.150 0.999600',
      'hello 0.160 0.330 0.793004',
      '<sil> 0.340 0.500 0.9',
      'world(2) 0.510 0.890 0.138010',
      '</s> 0.900 0.950 1.000000',
      'two three',
      '<s> 1.500 1.600 0.99',
      '[NOISE] 1.600 1.700 0.5',
      'two 1.700 1.900 0.5',
      'three 1.900 2.300 0.4',
      '</s> 2.300 2.400 1.0',
    ].join('\n');
    expect(parseTimedOutput(out)).toEqual({
      text: 'hello world two three',
      language: 'en',
      segments: [
        { text: 'hello world', start: 0.16, end: 0.89 },
        { text: 'two three', start: 1.7, end: 2.3 },
      ],
    });
  });

  it('is unavailable without the Debian package and says so', async () => {
    const missing = new PocketsphinxEngine({ binary: null });
    expect(missing.available).toBe(false);
    await expect(missing.transcribe(new Int16Array(16_000))).rejects.toBeInstanceOf(EngineUnavailableError);
  });

  it('supports English only', () => {
    expect(engine.supports('en-US')).toBe(true);
    expect(engine.supports(undefined)).toBe(true);
    expect(engine.supports('zh-CN')).toBe(false);
  });

  // Runs where `apt-get install pocketsphinx pocketsphinx-en-us` was done (not an npm package).
  const whenInstalled = engine.available ? it : it.skip;

  whenInstalled('transcribes English speech made by the TTS engine into segments split on the silence', async () => {
    const say = async (text: string) =>
      (
        await decodeAudio((await tts.synthesize(text, { voice: 'en-US-GuyNeural', format: 'wav', speed: 0.7 })).audio, {
          sampleRate: STT_SAMPLE_RATE,
        })
      ).pcm;
    const first = await say('I would like a cup of coffee');
    const second = await say('please call me tomorrow');
    const gap = STT_SAMPLE_RATE * 2;
    const pcm = new Int16Array(first.length + gap + second.length);
    pcm.set(first, 0);
    pcm.set(second, first.length + gap);
    const firstEnd = first.length / STT_SAMPLE_RATE;
    const secondStart = firstEnd + 2;

    const started = Date.now();
    const transcript = await engine.transcribe(pcm);
    console.log(
      `stt (pocketsphinx): ${(pcm.length / STT_SAMPLE_RATE).toFixed(2)} s of audio in ${Date.now() - started} ms -> "${transcript.text}"`,
    );
    // PocketSphinx is weak on synthetic speech, so the words are not checked one by one; the timing is.
    expect(transcript.text).toMatch(/^[a-z' ]+$/);
    expect(transcript.text.split(' ').length).toBeGreaterThanOrEqual(4);
    expect(transcript.segments.some((s) => s.end <= firstEnd + 0.3)).toBe(true);
    expect(transcript.segments.some((s) => s.start >= secondStart - 0.3)).toBe(true);
    for (const s of transcript.segments) {
      expect(s.end).toBeGreaterThan(s.start);
      // Nothing is heard inside the silence.
      expect(s.start >= secondStart - 0.3 || s.end <= firstEnd + 0.3).toBe(true);
    }
  });

  whenInstalled('hears nothing in silence', async () => {
    expect((await engine.transcribe(new Int16Array(STT_SAMPLE_RATE * 2))).text).toBe('');
  });

  // M4: the real engine code path with a stand-in binary (pocketsphinx itself need not be installed).
  it("runs at most its key's share of processes, refuses past the key's queue, and kills the process of a caller that leaves", async () => {
    const fake = await startFakeEngineBinary();
    const limiter = EngineLimiter.shared();
    const saved = { ...limiter.current };
    limiter.configure({ maxConcurrent: 8, maxConcurrentPerKey: 2, maxQueued: 8, maxQueuedPerKey: 1 });
    try {
      const stt = new PocketsphinxEngine({ binary: fake.binary, modelDir: fake.modelDir });
      expect(stt.available).toBe(true);
      const sessions = Array.from({ length: 5 }, () => new AbortController());
      // The calls reach the limiter in whatever order their temp files get written: count, don't index.
      const refused: EngineBusyError[] = [];
      let twoRefused!: () => void;
      const refusedTwice = new Promise<void>((r) => (twoRefused = r));
      const calls = sessions.map((c) =>
        stt.transcribe(new Int16Array(1600), { key: 'one-key', signal: c.signal }).then(
          (v) => v,
          (e: Error) => {
            if (e instanceof EngineBusyError && refused.push(e) === 2) twoRefused();
            return e;
          },
        ),
      );
      await refusedTwice;
      expect(refused.map((e) => e.scope)).toEqual(['key', 'key']);
      await fake.waitForStarts(2);
      expect(fake.running).toHaveLength(2);
      expect(limiter.stats.queued).toBe(1);
      const [first] = fake.running;
      // Every caller leaves: the running processes are killed, the queued call never spawns one.
      for (const c of sessions) c.abort();
      const outcomes = await Promise.all(calls);
      expect(outcomes.filter((e) => e instanceof EngineAbortedError)).toHaveLength(3);
      await fake.waitForExit(first);
      for (const pid of [first, ...fake.running]) await fake.waitForExit(pid);
      expect(pidAlive(first)).toBe(false);
      expect(fake.running).toEqual([]);
      expect(fake.started).toBe(2);
    } finally {
      limiter.configure(saved);
      await fake.close();
    }
  });
});
