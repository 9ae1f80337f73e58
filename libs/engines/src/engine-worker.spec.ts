import { EngineAbortedError, EngineLimiter } from './engine-limiter';
import { EngineInputError, EngineUnavailableError, EngineWorker } from './engine-worker';

const BODY = `
let loads = 0;
const slowArgs = [];
async function init(data) {
  loads++;
  if (data.failLoad) throw new Error('model file missing');
  return {
    async echo(x) { return { x, loads, threadId: require('worker_threads').threadId }; },
    async bad() { throw new InputError('not an image'); },
    async boom() { throw new Error('kaput'); },
    async crash() { process.exit(3); },
    async hang() { return new Promise(() => undefined); },
    async slow(ms) { slowArgs.push(ms); await new Promise((r) => setTimeout(r, ms)); return ms; },
    async slowArgs() { return slowArgs; },
    async bytes(n) { const b = new Uint8Array(n).fill(7); return transfer(b, [b.buffer]); },
  };
}
`;

describe('EngineWorker', () => {
  const workers: EngineWorker[] = [];
  const make = (data: Record<string, unknown> = {}, timeoutMs?: number, maxPending?: number) => {
    const w = new EngineWorker('test', BODY, data, timeoutMs, maxPending);
    workers.push(w);
    return w;
  };
  afterAll(() => Promise.all(workers.map((w) => w.close())));

  it('starts lazily, loads once and answers calls in order', async () => {
    const w = make();
    expect(w.started).toBe(false);
    const results = await Promise.all([1, 2, 3].map((x) => w.call<{ x: number; loads: number }>('echo', [x])));
    expect(w.started).toBe(true);
    expect(results.map((r) => [r.x, r.loads])).toEqual([
      [1, 1],
      [2, 1],
      [3, 1],
    ]);
    expect((await w.call<Uint8Array>('bytes', [1000])).length).toBe(1000);
  });

  it('separates bad input, engine errors and load failures', async () => {
    const w = make();
    await expect(w.call('bad')).rejects.toBeInstanceOf(EngineInputError);
    await expect(w.call('boom')).rejects.toThrow(/kaput/);
    await expect(w.call('nope')).rejects.toThrow(/unknown method/);
    const broken = make({ failLoad: true });
    await expect(broken.call('echo', [1])).rejects.toBeInstanceOf(EngineUnavailableError);
    // Load failures are final: later calls fail at once without a new worker.
    await expect(broken.call('echo', [1])).rejects.toThrow(/model file missing/);
  });

  it('recovers from a crashed worker with a fresh one', async () => {
    const w = make();
    const first = await w.call<{ threadId: number }>('echo', [1]);
    await expect(w.call('crash')).rejects.toBeInstanceOf(EngineUnavailableError);
    const second = await w.call<{ threadId: number; loads: number }>('echo', [2]);
    expect(second.threadId).not.toBe(first.threadId);
    expect(second.loads).toBe(1);
  });

  it('gives up on a hung call and restarts', async () => {
    const w = make({}, 300);
    // 'hang' never answers: only the call's own deadline can end it.
    await expect(w.call('hang')).rejects.toThrow(/no answer within 300 ms/);
    expect(w.started).toBe(false);
    // The fresh worker's start counts against the deadline too: a loaded machine must not fail the echo.
    (w as unknown as { timeoutMs: number }).timeoutMs = 120_000;
    expect((await w.call<{ x: number }>('echo', [5])).x).toBe(5);
  });

  const withLimits = async (limits: Parameters<EngineLimiter['configure']>[0], fn: () => Promise<void>) => {
    const limiter = EngineLimiter.shared();
    const saved = { ...limiter.current };
    limiter.configure(limits);
    try {
      await fn();
    } finally {
      limiter.configure(saved);
    }
  };

  it('refuses calls beyond its queue instead of queueing without bound', () =>
    withLimits({ maxConcurrent: 10 }, async () => {
      const w = make({}, 5000, 2);
      const a = w.call('slow', [200]);
      const b = w.call('slow', [10]);
      await expect(w.call('slow', [10])).rejects.toThrow(/busy/);
      expect(await Promise.all([a, b])).toEqual([200, 10]);
    }));

  it('passes calls through the shared limiter: a caller that leaves while waiting never reaches the worker, one that leaves mid-call gets EngineAbortedError', () =>
    withLimits({ maxConcurrent: 1, maxQueued: 4 }, async () => {
      const w = make();
      const running = new AbortController();
      const a = w.call('slow', [50], [], { signal: running.signal });
      const waiting = new AbortController();
      const b = w.call('slow', [11], [], { signal: waiting.signal });
      expect(EngineLimiter.shared().stats).toMatchObject({ active: 1, queued: 1 });
      waiting.abort();
      await expect(b).rejects.toBeInstanceOf(EngineAbortedError);
      running.abort();
      await expect(a).rejects.toBeInstanceOf(EngineAbortedError);
      // b never reached the worker; a ran or was cancelled there, depending on how far the worker had got.
      expect(await w.call('slowArgs')).not.toContain(11);
      expect(EngineLimiter.shared().stats).toMatchObject({ active: 0, queued: 0 });
    }));
});
