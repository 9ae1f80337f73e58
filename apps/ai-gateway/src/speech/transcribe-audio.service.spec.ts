import { EngineLimiter, encodeWav, PocketsphinxEngine } from '@app/engines';
import { FakeEngineBinary, pidAlive, startFakeEngineBinary } from '@app/engines/testing/fake-engine-binary';
import { GatewayError } from '../errors';
import { GatewayConfig } from '../config/gateway.config';
import { EngineLimits } from '../vision/engine-limits';
import { TranscribeAudioService } from './transcribe-audio.service';
import { TranscriptionEngines } from './transcription-engines';

describe('TranscribeAudioService engine limits and abort (M4, HTTP path)', () => {
  let fake: FakeEngineBinary;
  let service: TranscribeAudioService;
  const settled: any[] = [];
  const saved = { ...EngineLimiter.shared().current };

  beforeAll(async () => {
    fake = await startFakeEngineBinary();
    const config = Object.assign(new GatewayConfig(), {
      AI_LOCAL_STT: true,
      AI_ENGINE_MAX_CONCURRENT: 8,
      AI_ENGINE_MAX_CONCURRENT_PER_KEY: 1,
      AI_ENGINE_MAX_QUEUED_PER_KEY: 0,
    });
    const limits = new EngineLimits(config);
    const engines = new TranscriptionEngines(config, limits);
    (engines as any).local = new PocketsphinxEngine({ binary: fake.binary, modelDir: fake.modelDir });
    const metering = {
      reserve: async () => ({}),
      settle: async (_r: unknown, outcome: unknown) => void settled.push(outcome),
    };
    service = new TranscribeAudioService(config, engines, metering as any);
  });
  afterAll(async () => {
    EngineLimiter.shared().configure(saved);
    await fake.close();
  });

  const principal = (id: string) => ({ id, kind: 'api-key', roles: [], claims: {} }) as any;
  const file = { buffer: encodeWav(new Int16Array(16_000), 16_000), originalname: 'a.wav', size: 32_044 };

  it("answers 429 engine_busy past the key's share and kills the engine process when the client leaves", async () => {
    const leaving = new AbortController();
    const first = service.transcribe(principal('key-a'), file, {}, 'req-1', leaving.signal).then(
      () => null,
      (e) => e,
    );
    await fake.waitForStarts(1);
    const [pid] = fake.running;

    // Same key, while its one slot is taken and no queue is allowed: refused in the OpenAI error shape.
    const second = await service.transcribe(principal('key-a'), file, {}, 'req-2').then(
      () => null,
      (e) => e,
    );
    expect(second).toBeInstanceOf(GatewayError);
    expect(second.getStatus()).toBe(429);
    expect(second.getResponse()).toMatchObject({ errorCode: 'engine_busy', type: 'rate_limit_error' });

    leaving.abort();
    await fake.waitForExit(pid);
    const error = await first;
    expect(error.getStatus()).toBe(400);
    expect(error.getResponse()).toMatchObject({ errorCode: 'client_closed_request' });
    expect(pidAlive(pid)).toBe(false);
    expect(fake.running).toEqual([]);
    expect(settled.map((s) => s.status)).toEqual(['failed']);
  });
});
