import { EngineAbortedError, EngineBusyError, EngineLimiter } from './engine-limiter';

/** Work that runs until the test says so; counts how many are running. */
function gate() {
  let running = 0;
  let peak = 0;
  const releases: Array<() => void> = [];
  const started: Array<() => void> = [];
  const work = () =>
    new Promise<string>((resolve) => {
      running++;
      peak = Math.max(peak, running);
      releases.push(() => {
        running--;
        resolve('done');
      });
      started.shift()?.();
    });
  return {
    work,
    get running() {
      return running;
    },
    get peak() {
      return peak;
    },
    finishOne: () => releases.shift()!(),
    nextStart: () => new Promise<void>((r) => started.push(r)),
  };
}

describe('EngineLimiter', () => {
  it('runs at most maxConcurrent works, queues up to maxQueued and refuses the rest with a server-scope busy error', async () => {
    const limiter = new EngineLimiter({ maxConcurrent: 2, maxConcurrentPerKey: 10, maxQueued: 2, maxQueuedPerKey: 10 });
    const g = gate();
    const calls = Array.from({ length: 6 }, (_, i) =>
      limiter.run({ key: `k${i}` }, g.work).then(
        (v) => v,
        (e) => e,
      ),
    );
    const outcomes = await Promise.race([
      Promise.all(calls.slice(4)),
      new Promise((r) => setImmediate(r)).then(() => null),
    ]);
    expect(outcomes).toEqual([expect.any(EngineBusyError), expect.any(EngineBusyError)]);
    expect((outcomes as EngineBusyError[]).map((e) => e.scope)).toEqual(['server', 'server']);
    expect(g.running).toBe(2);
    expect(limiter.stats).toMatchObject({ active: 2, queued: 2 });
    // Each finished work lets exactly one waiter in.
    let next = g.nextStart();
    g.finishOne();
    await next;
    expect(g.running).toBe(2);
    next = g.nextStart();
    g.finishOne();
    await next;
    g.finishOne();
    g.finishOne();
    expect(await Promise.all(calls.slice(0, 4))).toEqual(['done', 'done', 'done', 'done']);
    expect(g.peak).toBe(2);
    expect(limiter.stats).toEqual({ active: 0, queued: 0, peakActive: 2, open: 0 });
  });

  it('gives one key at most its share, refuses that key past its queue with a key-scope error, and still serves other keys', async () => {
    const limiter = new EngineLimiter({ maxConcurrent: 4, maxConcurrentPerKey: 2, maxQueued: 10, maxQueuedPerKey: 1 });
    const g = gate();
    const mine = Array.from({ length: 5 }, () =>
      limiter.run({ key: 'greedy' }, g.work).then(
        (v) => v,
        (e) => e,
      ),
    );
    const refused = await Promise.all(mine.slice(3));
    expect(refused.map((e) => [e instanceof EngineBusyError, e.scope])).toEqual([
      [true, 'key'],
      [true, 'key'],
    ]);
    expect(g.running).toBe(2);
    expect(limiter.stats.queued).toBe(1);
    // Another key is not stuck behind the greedy one's queue.
    const started = g.nextStart();
    const other = limiter.run({ key: 'polite' }, g.work);
    await started;
    expect(g.running).toBe(3);
    while (g.running) {
      g.finishOne();
      await new Promise((r) => setImmediate(r));
    }
    expect(await other).toBe('done');
  });

  it('drops a queued caller whose signal aborts, and never starts its work', async () => {
    const limiter = new EngineLimiter({ maxConcurrent: 1, maxConcurrentPerKey: 1, maxQueued: 5, maxQueuedPerKey: 5 });
    const g = gate();
    const first = limiter.run({ key: 'a' }, g.work);
    const leaving = new AbortController();
    let ran = false;
    const queued = limiter.run({ key: 'a', signal: leaving.signal }, async () => {
      ran = true;
      return 'x';
    });
    expect(limiter.stats.queued).toBe(1);
    leaving.abort();
    await expect(queued).rejects.toBeInstanceOf(EngineAbortedError);
    expect(limiter.stats.queued).toBe(0);
    g.finishOne();
    expect(await first).toBe('done');
    expect(ran).toBe(false);
    // An already aborted caller is refused without taking a slot.
    await expect(limiter.run({ signal: leaving.signal }, g.work)).rejects.toBeInstanceOf(EngineAbortedError);
    expect(limiter.stats.active).toBe(0);
  });

  it('gives a free slot to the key with the fewest works running and served longest ago, not to the oldest waiter', async () => {
    const limiter = new EngineLimiter({ maxConcurrent: 1, maxConcurrentPerKey: 1, maxQueued: 10, maxQueuedPerKey: 10 });
    const order: string[] = [];
    const g = gate();
    const step = (key: string, name: string) =>
      limiter.run({ key }, async () => {
        order.push(name);
        return g.work();
      });
    const started = async (n: number) => {
      while (order.length < n) await new Promise((r) => setImmediate(r));
    };
    const runs = [step('a', 'a1'), step('a', 'a2'), step('a', 'a3'), step('b', 'b1')];
    // a1 runs; a2 and a3 waited longer than b1, but b has nothing running when a1 ends.
    await started(1);
    for (let n = 2; n <= 4; n++) {
      g.finishOne();
      await started(n);
    }
    g.finishOne();
    await Promise.all(runs);
    expect(order).toEqual(['a1', 'b1', 'a2', 'a3']);
  });

  it('never refuses a continued step for the queue caps, which still refuse new work', async () => {
    const limiter = new EngineLimiter({ maxConcurrent: 1, maxConcurrentPerKey: 1, maxQueued: 1, maxQueuedPerKey: 1 });
    const g = gate();
    const first = limiter.run({ key: 'a' }, g.work);
    const queued = limiter.run({ key: 'a' }, g.work);
    await expect(limiter.run({ key: 'a' }, g.work)).rejects.toMatchObject({ scope: 'key' });
    await expect(limiter.run({ key: 'b' }, g.work)).rejects.toMatchObject({ scope: 'server' });
    const continued = limiter.run({ key: 'a', continued: true }, g.work);
    expect(limiter.stats.queued).toBe(2);
    for (const run of [first, queued, continued]) {
      await new Promise((r) => setImmediate(r));
      g.finishOne();
      expect(await run).toBe('done');
    }
  });

  it('does not let a key that comes back idle pass a key still waiting (no starvation by alternating keys)', async () => {
    const limiter = new EngineLimiter({ maxConcurrent: 1, maxConcurrentPerKey: 1, maxQueued: 20, maxQueuedPerKey: 20 });
    const order: string[] = [];
    const g = gate();
    const step = (key: string) =>
      limiter.run({ key }, async () => {
        order.push(key);
        return g.work();
      });
    const started = async (n: number) => {
      while (order.length < n) await new Promise((r) => setImmediate(r));
    };
    const runs = [step('w'), step('w'), step('w')];
    await started(1);
    // Two keys come and go, one call at a time each, while w still has two waiting.
    for (let n = 2; n <= 7; n++) {
      runs.push(step(n % 2 === 0 ? 'a' : 'b'));
      g.finishOne();
      await started(n);
    }
    while (g.running > 0) {
      g.finishOne();
      await new Promise((r) => setImmediate(r));
    }
    await Promise.all(runs);
    // Round robin: w gets every other turn (first by its own age, then after each newcomer).
    expect(order).toEqual(['w', 'a', 'w', 'b', 'a', 'w', 'b', 'a', 'b']);
  });

  it('bounds work of several steps under way per key and per process (openWork), so continued steps are bounded too', () => {
    const limiter = new EngineLimiter({ maxConcurrent: 2, maxConcurrentPerKey: 1, maxQueued: 3, maxQueuedPerKey: 2 });
    const closes = [limiter.openWork('a'), limiter.openWork('a'), limiter.openWork('a')];
    expect(() => limiter.openWork('a')).toThrow(expect.objectContaining({ scope: 'key' }));
    closes.push(limiter.openWork('b'), limiter.openWork());
    expect(() => limiter.openWork('c')).toThrow(expect.objectContaining({ scope: 'server' }));
    closes[0]();
    closes[0]();
    expect(limiter.stats.open).toBe(4);
    expect(() => limiter.openWork('a')).not.toThrow();
  });
});
