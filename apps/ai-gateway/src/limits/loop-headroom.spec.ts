import { eventLoopGauge, HeadroomTimers, LoopHeadroom } from './loop-headroom';

/** Timers that run only when the test says: `soon` on flushSoon(), `after` when the clock passes their time. */
class FakeTimers implements HeadroomTimers {
  at = 0;
  readonly soonQueue: Array<() => void> = [];
  readonly timers: Array<{ due: number; fn: () => void }> = [];

  now(): number {
    return this.at;
  }
  soon(fn: () => void): void {
    this.soonQueue.push(fn);
  }
  after(ms: number, fn: () => void): void {
    this.timers.push({ due: this.at + ms, fn });
  }
  flushSoon(): void {
    for (const fn of this.soonQueue.splice(0)) fn();
  }
  advance(ms: number): void {
    this.at += ms;
    for (const t of this.timers.splice(0)) {
      if (t.due <= this.at) t.fn();
      else this.timers.push(t);
    }
  }
}

describe('LoopHeadroom', () => {
  let busy: number;
  // A new 10 ms window at every sample, busy for `busy` of it.
  const gauge = { sample: () => ({ busyMs: busy * 10, elapsedMs: 10 }) };

  beforeEach(() => (busy = 0));

  it('runs the next slice in a later turn, not in the caller, while the loop has room', () => {
    const timers = new FakeTimers();
    const headroom = new LoopHeadroom(0.5, gauge, 10, timers);
    const ran: string[] = [];
    busy = 0.49;
    headroom.schedule(() => ran.push('a'));
    expect(ran).toEqual([]);
    timers.flushSoon();
    expect(ran).toEqual(['a']);
    expect(timers.timers).toHaveLength(0);
  });

  it('waits a millisecond at a time while the loop is busier than its share, and runs once it is not', () => {
    const timers = new FakeTimers();
    const headroom = new LoopHeadroom(0.5, gauge, 10, timers);
    const ran: string[] = [];
    busy = 0.8;
    headroom.schedule(() => ran.push('a'));
    timers.flushSoon();
    timers.advance(1);
    timers.advance(1);
    expect(ran).toEqual([]);
    busy = 0.3;
    timers.advance(1);
    expect(ran).toEqual(['a']);
    expect(timers.timers).toHaveLength(0);
  });

  it('runs after maxWaitMs however busy the loop stays: bulk work always goes on', () => {
    const timers = new FakeTimers();
    const headroom = new LoopHeadroom(0.5, gauge, 10, timers);
    let ran = 0;
    busy = 1;
    headroom.schedule(() => ran++);
    for (let ms = 1; ms < 10; ms++) {
      timers.advance(1);
      expect({ ms, ran }).toEqual({ ms, ran: 0 });
    }
    timers.advance(1);
    expect(ran).toBe(1);
    expect(timers.timers).toHaveLength(0);
  });

  it("leaves the bulk slices' own time out: bulk work alone does not wait for itself", () => {
    const timers = new FakeTimers();
    const headroom = new LoopHeadroom(0.5, gauge, 10, timers);
    let ran = 0;
    busy = 0.8;
    headroom.bulkWorked(4); // 8 ms busy in the window, 4 of them bulk slices: 0.4 of the loop for calls
    headroom.schedule(() => ran++);
    timers.flushSoon();
    expect(ran).toBe(1);
    // The next window's share counts only what was reported in it.
    headroom.schedule(() => ran++);
    timers.flushSoon();
    expect(ran).toBe(1);
    expect(timers.timers).toHaveLength(1);
  });

  it('share 1 never waits, whatever the loop', () => {
    const timers = new FakeTimers();
    const headroom = new LoopHeadroom(1, gauge, 10, timers);
    let ran = 0;
    busy = 1;
    headroom.schedule(() => ran++);
    timers.flushSoon();
    expect(ran).toBe(1);
    expect(timers.timers).toHaveLength(0);
  });

  it("the real gauge reads the loop's busy time: most of a busy stretch, never more than the time elapsed", () => {
    const gauge = eventLoopGauge(0);
    const until = performance.now() + 30;
    while (performance.now() < until) {
      // busy: the loop gets no turn
    }
    const sample = gauge.sample()!;
    expect(sample.elapsedMs).toBeGreaterThanOrEqual(30);
    expect(sample.busyMs / sample.elapsedMs).toBeGreaterThan(0.5);
    expect(sample.busyMs).toBeLessThanOrEqual(sample.elapsedMs);
    // Within a window, no new sample.
    expect(eventLoopGauge(60_000).sample()).toBeUndefined();
  });
});
