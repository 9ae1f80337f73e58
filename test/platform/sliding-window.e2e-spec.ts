import { randomBytes } from 'crypto';
import { SlidingWindowLimiter } from '../../libs/platform/src/rate-limit/sliding-window';
import { SharedState } from '../../libs/platform/src/shared-state/shared-state';
import { backends } from '../scale-out/shared-backends';
import { openSharedState } from '../support/shared-state';

// Per-key requests per minute (the gateway's API keys): a sliding window in shared state with an
// injected clock, so no test here depends on when it runs.
describe.each(backends('sliding window'))('SlidingWindowLimiter, %s', (_label, backend) => {
  let state: SharedState;
  let close: () => Promise<void>;
  const id = randomBytes(6).toString('hex');
  const MINUTE = 60_000;
  // A minute boundary of the old fixed windows (floor(now / 60 000)).
  const boundary = Math.ceil(Date.now() / MINUTE) * MINUTE + 10 * MINUTE;

  beforeAll(async () => {
    ({ state, close } = await openSharedState(backend));
  });
  afterAll(() => close?.());

  function limiterAt(clock: { now: number }, prefix = `sw-${id}:`) {
    return new SlidingWindowLimiter(state, prefix, () => clock.now);
  }

  it('lets no more than the limit through across a window boundary', async () => {
    const clock = { now: boundary - 100 };
    const limiter = limiterAt(clock);
    const allowed: number[] = [];
    for (let i = 0; i < 5; i++) if ((await limiter.hit('boundary', 5, MINUTE)).allowed) allowed.push(clock.now);
    clock.now = boundary + 100; // a fixed window starts afresh here
    for (let i = 0; i < 5; i++) if ((await limiter.hit('boundary', 5, MINUTE)).allowed) allowed.push(clock.now);
    expect(allowed).toHaveLength(5);
    const refused = await limiter.hit('boundary', 5, MINUTE);
    expect(refused.allowed).toBe(false);
    expect(refused.count).toBe(5);
    // Retry-After points at when the oldest hit leaves the window (at most one bucket late).
    expect(refused.retryAfterMs).toBeGreaterThan(MINUTE - 200 - 1);
    expect(refused.retryAfterMs).toBeLessThanOrEqual(MINUTE - 200 + 1000);
  });

  it('never has more than the limit in any window while hits arrive steadily, and frees capacity as hits age', async () => {
    const clock = { now: boundary };
    const limiter = limiterAt(clock);
    const allowedAt: number[] = [];
    // 3 tries every 7 s for 5 minutes against a limit of 4 per minute.
    for (let t = 0; t < 5 * MINUTE; t += 7000) {
      clock.now = boundary + t;
      for (let i = 0; i < 3; i++) if ((await limiter.hit('steady', 4, MINUTE)).allowed) allowedAt.push(clock.now);
    }
    for (const start of allowedAt) expect(allowedAt.filter((t) => t >= start && t < start + MINUTE).length).toBeLessThanOrEqual(4);
    // Capacity comes back as hits age out: close to 4 a minute over 5 minutes (strict by one 1 s bucket).
    expect(allowedAt.length).toBeGreaterThanOrEqual(4 * 4);
  });

  it('keeps keys apart and counts concurrent hits from several replicas exactly', async () => {
    const clock = { now: boundary + 30 * MINUTE };
    const replicas = [limiterAt(clock), limiterAt(clock), limiterAt(clock)];
    const results = await Promise.all(Array.from({ length: 30 }, (_, i) => replicas[i % 3].hit('shared', 10, MINUTE)));
    expect(results.filter((r) => r.allowed)).toHaveLength(10);
    expect((await replicas[0].hit('other', 10, MINUTE)).allowed).toBe(true);
  });
});
