import { randomBytes } from 'crypto';
import { SharedState } from '../../libs/platform/src/shared-state/shared-state';
import { TimedHolds } from '../../libs/platform/src/shared-state/timed-holds';
import { backends } from '../scale-out/shared-backends';
import { FakeClock } from '../support/clock';
import { openSharedState } from '../support/shared-state';

// TimedHolds: locks and cooldowns end by the Clock, on both backends, whatever the store's expiry says.
describe.each(backends('timed holds'))('TimedHolds, %s', (_label, backend) => {
  let state: SharedState;
  let close: () => Promise<void>;
  const id = randomBytes(6).toString('hex');

  beforeAll(async () => {
    ({ state, close } = await openSharedState(backend));
  });
  afterAll(() => close?.());

  it('holds for exactly its length by the clock, refuses a second start meanwhile, and starts again after', async () => {
    const clock = new FakeClock();
    const holds = new TimedHolds(state, clock);
    const key = `hold-${id}-a`;
    expect(await holds.remaining(key)).toBe(0);
    expect(await holds.start(key, 3_600_000)).toBe(true);
    expect(await holds.remaining(key)).toBe(3_600_000);
    expect(await holds.start(key, 3_600_000)).toBe(false);
    clock.advance(3_599_999);
    expect(await holds.remaining(key)).toBe(1);
    expect(await holds.start(key, 3_600_000)).toBe(false);
    // Over by the clock while the store still keeps the entry (its own expiry is an hour of real time).
    clock.advance(1);
    expect(await state.ttl(key)).toBeGreaterThan(0);
    expect(await holds.remaining(key)).toBe(0);
    expect(await holds.start(key, 60_000)).toBe(true);
    expect(await holds.remaining(key)).toBe(60_000);
  });

  it('reads an entry written before holds carried their end by its store expiry', async () => {
    const holds = new TimedHolds(state, new FakeClock());
    await state.set(`hold-${id}-legacy`, '1', 60_000);
    const left = await holds.remaining(`hold-${id}-legacy`);
    expect(left).toBeGreaterThan(0);
    expect(left).toBeLessThanOrEqual(60_000);
    expect(await holds.start(`hold-${id}-legacy`, 60_000)).toBe(false);
  });
});
