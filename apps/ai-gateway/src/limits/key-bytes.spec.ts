import { CallAbortedError } from '@app/llm';
import { KeyBytes } from './key-bytes';

/** A call that runs until the test ends it. */
function held() {
  let end!: () => void;
  const done = new Promise<void>((r) => (end = r));
  return { work: () => done, end };
}

const settle = () => new Promise((r) => setImmediate(r));

describe('KeyBytes', () => {
  it("runs a key's calls while their bytes fit, the next in order once enough were given back; other keys never wait", async () => {
    const bytes = new KeyBytes(100);
    const started: string[] = [];
    const a1 = held();
    const a2 = held();
    const a3 = held();
    const run = (key: string, n: number, name: string, work: () => Promise<void>) =>
      bytes.run(key, n, async () => {
        started.push(name);
        await work();
      });
    const p1 = run('a', 60, 'a1', a1.work);
    const p2 = run('a', 60, 'a2', a2.work); // 120 > 100: waits
    const p3 = run('a', 10, 'a3', a3.work); // would fit, but waits its turn behind a2
    const b = run('b', 1000, 'b', async () => undefined); // another key, a lone call larger than the bound: runs
    await settle();
    expect(started).toEqual(['a1', 'b']);
    expect(bytes.held('a')).toBe(60);

    a1.end();
    await p1;
    await settle();
    expect(started).toEqual(['a1', 'b', 'a2', 'a3']);
    expect(bytes.held('a')).toBe(70);
    a2.end();
    a3.end();
    await Promise.all([p2, p3, b]);
    expect(bytes.size).toBe(0);
  });

  it("a key's lone call runs whatever its size; a call whose client left while waiting is dropped and the next one runs", async () => {
    const bytes = new KeyBytes(10);
    const big = held();
    const first = bytes.run('a', 50, big.work);
    const gone = new AbortController();
    const waiting = bytes.run('a', 5, async () => 'never', gone.signal);
    const next = bytes.run('a', 5, async () => 'ran');
    gone.abort();
    await expect(waiting).rejects.toBeInstanceOf(CallAbortedError);
    big.end();
    await first;
    await expect(next).resolves.toBe('ran');
    expect(bytes.size).toBe(0);
  });

  it('a failed call gives its bytes back; a bound of 0 bounds nothing', async () => {
    const bytes = new KeyBytes(10);
    await expect(bytes.run('a', 8, () => Promise.reject(new Error('upstream')))).rejects.toThrow('upstream');
    expect(bytes.held('a')).toBe(0);
    const none = new KeyBytes(0);
    const h = held();
    const p = none.run('a', 1e9, h.work);
    await expect(none.run('a', 1e9, async () => 'ran')).resolves.toBe('ran');
    h.end();
    await p;
  });

  it('hold keeps the bytes past the work until its answer is released (once), or gives them back when it fails', async () => {
    const bytes = new KeyBytes(100);
    let ownReleased = 0;
    const first = await bytes.hold('a', 80, async () => ({ text: 'answer', release: () => ownReleased++ }));
    expect(first.text).toBe('answer');
    expect(bytes.held('a')).toBe(80);
    let secondRan = false;
    const second = bytes.hold('a', 80, async () => {
      secondRan = true;
      return { text: 'second' };
    });
    await settle();
    expect(secondRan).toBe(false); // the first answer is not sent yet
    first.release();
    first.release();
    expect(ownReleased).toBe(1);
    const s = await second;
    expect(secondRan).toBe(true);
    expect(bytes.held('a')).toBe(80);
    s.release();
    expect(bytes.size).toBe(0);

    // An answer queued on a pipelined connection gives back its share at once, its own memory once sent.
    let kept = 0;
    const queued = await bytes.hold('a', 80, async () => ({ release: () => kept++ }));
    queued.releaseShare();
    expect(bytes.size).toBe(0);
    expect(kept).toBe(0);
    queued.release();
    expect(kept).toBe(1);
    expect(bytes.size).toBe(0);

    await expect(bytes.hold('a', 8, () => Promise.reject(new Error('upstream')))).rejects.toThrow('upstream');
    expect(bytes.size).toBe(0);
    const unbounded = await new KeyBytes(0).hold('a', 1e9, async () => ({}));
    unbounded.release();
  });
});
