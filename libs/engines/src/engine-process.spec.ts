import { once } from 'events';
import { EngineAbortedError, EngineBusyError, EngineLimiter, EngineLimits } from './engine-limiter';
import { engineProcesses, LiveEngineProcess, runEngineProcess } from './engine-process';
import { pidAlive, startFakeEngineBinary, FakeEngineBinary } from './testing/fake-engine-binary';

describe('runEngineProcess (real child processes under the shared limiter)', () => {
  let fake: FakeEngineBinary;
  let saved: EngineLimits;
  const limiter = EngineLimiter.shared();

  beforeAll(async () => {
    fake = await startFakeEngineBinary();
    saved = { ...limiter.current };
  });
  afterAll(async () => {
    limiter.configure(saved);
    await fake.close();
  });

  const run = (key: string, signal: AbortSignal) =>
    runEngineProcess('test', fake.binary, ['-infile', 'x'], {
      key,
      signal,
      timeoutMs: 600_000,
      timeoutError: () => new Error('timeout'),
    });

  it('with a cap of 2, five concurrent calls run 2 processes, queue 1, refuse 2; a caller that leaves gets its process killed and the queued one starts', async () => {
    limiter.configure({ maxConcurrent: 2, maxConcurrentPerKey: 2, maxQueued: 1, maxQueuedPerKey: 1 });
    const controllers = Array.from({ length: 5 }, () => new AbortController());
    const spawned: LiveEngineProcess[] = [];
    const onSpawn = (p: LiveEngineProcess) => spawned.push(p);
    engineProcesses.on('spawn', onSpawn);
    const calls = controllers.map((c, i) =>
      run(`key-${i}`, c.signal).then(
        (v) => v,
        (e: Error) => e,
      ),
    );

    expect(await Promise.all(calls.slice(3))).toEqual([expect.any(EngineBusyError), expect.any(EngineBusyError)]);
    await fake.waitForStarts(2);
    expect(fake.running).toHaveLength(2);
    expect(engineProcesses.live.filter((p) => p.engine === 'test')).toHaveLength(2);
    expect(limiter.stats).toMatchObject({ active: 2, queued: 1 });

    // The first caller disconnects: its child is killed and reaped, then the queued call spawns.
    const victim = spawned[0].pid;
    const gone = fake.waitForExit(victim);
    const thirdSpawn = once(engineProcesses, 'spawn');
    controllers[0].abort();
    expect(await calls[0]).toBeInstanceOf(EngineAbortedError);
    await gone;
    expect(pidAlive(victim)).toBe(false);
    await thirdSpawn;
    await fake.waitForStarts(3);
    expect(fake.running).toHaveLength(2);
    expect(limiter.stats).toMatchObject({ active: 2, queued: 0 });

    for (const c of controllers) c.abort();
    const outcomes = await Promise.all(calls);
    expect(outcomes.slice(0, 3).every((e) => e instanceof EngineAbortedError)).toBe(true);
    for (const p of spawned) {
      await fake.waitForExit(p.pid);
      expect(pidAlive(p.pid)).toBe(false);
    }
    expect(spawned).toHaveLength(3);
    expect(fake.running).toEqual([]);
    expect(engineProcesses.live.filter((p) => p.engine === 'test')).toEqual([]);
    engineProcesses.off('spawn', onSpawn);
  });
});
