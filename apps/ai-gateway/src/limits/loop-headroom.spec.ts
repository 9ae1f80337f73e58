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
  const gauge = { busy: () => busy };

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

  it("the real gauge reads the loop's utilization: near 1 after a busy stretch, 0 to 1 in any case", () => {
    const gauge = eventLoopGauge(0);
    const until = performance.now() + 30;
    while (performance.now() < until) {
      // busy: the loop gets no turn
    }
    const share = gauge.busy();
    expect(share).toBeGreaterThan(0.5);
    expect(share).toBeLessThanOrEqual(1);
  });
});
