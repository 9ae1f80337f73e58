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
    const first = await state.hit(`hit-${id}-a`, `hit-${id}-block`, 300);
    expect(first).toMatchObject({ blockedMs: 0, count: 1 });
    expect(first.ttlMs).toBeGreaterThan(200);
    expect(first.ttlMs).toBeLessThanOrEqual(300);
    const second = await state.hit(`hit-${id}-a`, `hit-${id}-block`, 300);
    expect(second).toMatchObject({ blockedMs: 0, count: 2 });
    expect(second.ttlMs).toBeLessThanOrEqual(first.ttlMs);
    await new Promise((r) => setTimeout(r, 350));
    expect(await state.hit(`hit-${id}-a`, `hit-${id}-block`, 300)).toMatchObject({ blockedMs: 0, count: 1 });
  });

  it('counts nothing while the block key is live and reports its remaining time', async () => {
    expect(await state.hit(`hit-${id}-b`, `hit-${id}-block`, 5000)).toMatchObject({ count: 1 });
    expect(await state.setIfAbsent(`hit-${id}-block`, '1', 400)).toBe(true);
    const blocked = await state.hit(`hit-${id}-b`, `hit-${id}-block`, 5000);
    expect(blocked.blockedMs).toBeGreaterThan(0);
    expect(blocked.blockedMs).toBeLessThanOrEqual(400);
    expect(blocked.count).toBe(0);
    await new Promise((r) => setTimeout(r, 450));
    // The blocked hit was not counted: the counter goes on from 1.
    expect(await state.hit(`hit-${id}-b`, `hit-${id}-block`, 5000)).toMatchObject({ blockedMs: 0, count: 2 });
  });

  it('counts concurrent hits exactly', async () => {
    const key = `hit-${id}-a`;
    await new Promise((r) => setTimeout(r, 350)); // the first test's counter has expired
    const results = await Promise.all(Array.from({ length: 20 }, () => state.hit(key, `hit-${id}-block`, 5000)));
    expect(results.map((r) => r.count).sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
  });
});
