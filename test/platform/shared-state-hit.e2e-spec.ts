import { randomBytes } from 'crypto';
import { SharedState } from '../../libs/platform/src/shared-state/shared-state';
import { backends } from '../scale-out/shared-backends';
import { openSharedState } from '../support/shared-state';

// SharedState.hit: the rate limiter's block check and count in one round trip, on both backends.
describe.each(backends('shared-state hit'))('SharedState.hit, %s', (_label, backend) => {
  let state: SharedState;
  let close: () => Promise<void>;
  const id = randomBytes(6).toString('hex');

  beforeAll(async () => {
    ({ state, close } = await openSharedState(backend));
  });
  afterAll(() => close?.());

  it('counts hits with a lifetime that is not extended, then starts again', async () => {
    // Two hits in one window however slow the machine is: a 60 s window.
    const first = await state.hit(`hit-${id}-a`, `hit-${id}-block`, 60_000);
    expect(first).toMatchObject({ blockedMs: 0, count: 1 });
    expect(first.ttlMs).toBeGreaterThan(0);
    expect(first.ttlMs).toBeLessThanOrEqual(60_000);
    const second = await state.hit(`hit-${id}-a`, `hit-${id}-block`, 60_000);
    expect(second).toMatchObject({ blockedMs: 0, count: 2 });
    expect(second.ttlMs).toBeLessThanOrEqual(first.ttlMs);
    // A short window, hit until it has ended: inside it every hit counts one more and its remaining
    // time never goes up (an extended lifetime would go back up, and never end); then it starts again.
    let previous = await state.hit(`hit-${id}-short`, `hit-${id}-block`, 300);
    expect(previous).toMatchObject({ blockedMs: 0, count: 1 });
    for (;;) {
      await new Promise((r) => setTimeout(r, 50)); // pacing only: the loop ends on the counter restarting
      const next = await state.hit(`hit-${id}-short`, `hit-${id}-block`, 300);
      if (next.count === 1) break;
      expect({ count: next.count, notExtended: next.ttlMs <= previous.ttlMs }).toEqual({
        count: previous.count + 1,
        notExtended: true,
      });
      previous = next;
    }
  });

  it('counts nothing while the block key is live and reports its remaining time', async () => {
    expect(await state.hit(`hit-${id}-b`, `hit-${id}-block`, 60_000)).toMatchObject({ count: 1 });
    expect(await state.setIfAbsent(`hit-${id}-block`, '1', 60_000)).toBe(true);
    const blocked = await state.hit(`hit-${id}-b`, `hit-${id}-block`, 60_000);
    expect(blocked.blockedMs).toBeGreaterThan(0);
    expect(blocked.blockedMs).toBeLessThanOrEqual(60_000);
    expect(blocked.count).toBe(0);
    await state.del(`hit-${id}-block`); // the block ends by removal rather than by waiting for it
    // The blocked hit was not counted: the counter goes on from 1.
    expect(await state.hit(`hit-${id}-b`, `hit-${id}-block`, 60_000)).toMatchObject({ blockedMs: 0, count: 2 });
  });

  it('counts concurrent hits exactly', async () => {
    const key = `hit-${id}-c`;
    const results = await Promise.all(Array.from({ length: 20 }, () => state.hit(key, `hit-${id}-block`, 60_000)));
    expect(results.map((r) => r.count).sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
  });

  it('answers hits asked together each as if alone: counted per key in the order asked, a blocked one not counted', async () => {
    const block = `hit-${id}-mixed-block`;
    expect(await state.setIfAbsent(block, '1', 60_000)).toBe(true);
    const free = `hit-${id}-mixed-free-block`;
    // Asked in one turn: on PostgreSQL the first goes alone and the rest wait for it, then go in one statement.
    const asked = [
      state.hit(`hit-${id}-m0`, free, 60_000),
      state.hit(`hit-${id}-m1`, free, 60_000),
      state.hit(`hit-${id}-m1`, free, 60_000),
      state.hit(`hit-${id}-m2`, block, 60_000),
      state.hit(`hit-${id}-m1`, free, 60_000),
      state.hit(`hit-${id}-m3`, free, 60_000),
      state.hit(`hit-${id}-m2`, block, 60_000),
    ];
    const answers = await Promise.all(asked);
    expect(answers.map((a) => a.count)).toEqual([1, 1, 2, 0, 3, 1, 0]);
    expect(answers[3].blockedMs).toBeGreaterThan(0);
    expect(answers[6].blockedMs).toBeGreaterThan(0);
    for (const i of [0, 1, 2, 4, 5]) {
      expect(answers[i].blockedMs).toBe(0);
      expect(answers[i].ttlMs).toBeGreaterThan(0);
    }
    // The blocked hits were not counted: once the block is gone, the key starts from 1.
    await state.del(block);
    expect(await state.hit(`hit-${id}-m2`, block, 60_000)).toMatchObject({ blockedMs: 0, count: 1 });
    expect(await state.hit(`hit-${id}-m1`, free, 60_000)).toMatchObject({ blockedMs: 0, count: 4 });
  });
});
