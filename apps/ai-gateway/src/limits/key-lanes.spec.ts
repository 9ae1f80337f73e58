import { CallAbortedError } from '@app/llm';
import { KeyLanes } from './key-lanes';

/** A piece of work that runs until `finish` is called, recording when it started. */
function held(log: string[], name: string) {
  let finish!: () => void;
  const done = new Promise<void>((resolve) => (finish = resolve));
  return {
    work: async () => {
      log.push(`start ${name}`);
      await done;
      log.push(`end ${name}`);
      return name;
    },
    finish: () => finish(),
  };
}

const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('KeyLanes', () => {
  it("runs a key's work one at a time in the order it asked, and other keys' beside it", async () => {
    const lanes = new KeyLanes();
    const log: string[] = [];
    const a1 = held(log, 'a1');
    const a2 = held(log, 'a2');
    const b1 = held(log, 'b1');
    const runs = [lanes.run('a', a1.work), lanes.run('a', a2.work), lanes.run('b', b1.work)];
    await settle();
    expect(log).toEqual(['start a1', 'start b1']);
    a2.finish(); // finishing a waiting call's work early does not start it out of turn
    await settle();
    expect(log).toEqual(['start a1', 'start b1']);
    a1.finish();
    b1.finish();
    await expect(Promise.all(runs)).resolves.toEqual(['a1', 'a2', 'b1']);
    expect(log).toEqual(['start a1', 'start b1', 'end a1', 'end b1', 'start a2', 'end a2']);
    expect(lanes.size).toBe(0);
  });

  it('goes on with the next call when work fails, and holds no entry once the lane is empty', async () => {
    const lanes = new KeyLanes();
    const failing = lanes.run('a', async () => {
      throw new Error('bad input');
    });
    const next = lanes.run('a', async () => 'next');
    await expect(failing).rejects.toThrow('bad input');
    await expect(next).resolves.toBe('next');
    expect(lanes.size).toBe(0);
  });

  it('drops a waiting call whose client left (CallAbortedError) without running it; the lane goes on', async () => {
    const lanes = new KeyLanes();
    const log: string[] = [];
    const first = held(log, 'first');
    const gone = new AbortController();
    const running = lanes.run('a', first.work);
    const left = lanes.run('a', async () => void log.push('left ran'), gone.signal);
    const third = lanes.run('a', async () => void log.push('third ran'));
    await settle();
    gone.abort();
    await expect(left).rejects.toBeInstanceOf(CallAbortedError);
    first.finish();
    await running;
    await third;
    expect(log).toEqual(['start first', 'end first', 'third ran']);
    expect(lanes.size).toBe(0);
    // A client gone before it asked is refused at once.
    const already = new AbortController();
    already.abort();
    await expect(lanes.run('a', async () => 'x', already.signal)).rejects.toBeInstanceOf(CallAbortedError);
    expect(lanes.size).toBe(0);
  });

  it('rests as long as the work took before the next waiting call of the key starts; a lone call hands on at once', async () => {
    let now = 0;
    const timers: Array<{ ms: number; fn: () => void }> = [];
    const lanes = new KeyLanes({ now: () => now, after: (ms, fn) => void timers.push({ ms, fn }) });
    const log: string[] = [];
    const first = held(log, 'first');
    const running = lanes.run('a', async () => {
      const done = await first.work();
      now += 5; // the work took 5 ms
      return done;
    });
    const next = lanes.run('a', async () => void log.push('next ran'));
    await settle();
    first.finish();
    await running;
    await settle();
    // The lane rests 5 ms (a timer) before the next call of the key starts; another key is not held.
    expect(timers.map((t) => t.ms)).toEqual([5]);
    expect(log).toEqual(['start first', 'end first']);
    await expect(lanes.run('b', async () => 'b ran')).resolves.toBe('b ran');
    timers.shift()!.fn();
    await next;
    expect(log).toEqual(['start first', 'end first', 'next ran']);
    // Alone in its lane, or shorter than a millisecond: no rest.
    await lanes.run('a', async () => void (now += 50));
    const quick = lanes.run('a', async () => void (now += 0.5));
    const after = lanes.run('a', async () => 'after');
    await quick;
    await expect(after).resolves.toBe('after');
    expect(timers).toEqual([]);
    expect(lanes.size).toBe(0);
  });
});
