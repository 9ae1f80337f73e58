import { randomBytes } from 'crypto';
import { distinctEntries, SharedState } from '../../libs/platform/src/shared-state/shared-state';
import { backends } from '../scale-out/shared-backends';
import { recordRoundTrips } from '../support/round-trips';
import { openSharedState } from '../support/shared-state';

/** Paces a poll on the store's own expiry; the loop ends on the state, not on time. */
const pace = () => new Promise((r) => setTimeout(r, 25));

// SharedState.getMany / setManyWithin: a batch in one round trip whatever its size, and a byte bound
// per counter that holds under concurrency, on both backends (used by the embeddings cache).
describe.each(backends('shared-state batches'))('SharedState batches, %s', (_label, backend) => {
  let state: SharedState;
  let close: () => Promise<void>;
  const id = randomBytes(6).toString('hex');

  beforeAll(async () => {
    ({ state, close } = await openSharedState(backend));
  });
  afterAll(() => close?.());

  it('getMany reads live values in the order asked, null where absent or expired', async () => {
    await state.set(`many-${id}-a`, 'A', 60_000);
    await state.set(`many-${id}-b`, 'B', 60_000);
    await state.set(`many-${id}-gone`, 'G', 1);
    while ((await state.get(`many-${id}-gone`)) !== null) await pace();
    expect(
      await state.getMany([`many-${id}-b`, `many-${id}-none`, `many-${id}-a`, `many-${id}-gone`, `many-${id}-b`]),
    ).toEqual(['B', null, 'A', null, 'B']);
    expect(await state.getMany([])).toEqual([]);
  });

  it('getMany and setManyWithin take one round trip for 1 key and for 2048', async () => {
    const rec = recordRoundTrips();
    try {
      const few = Array.from({ length: 1 }, (_, i) => `many-${id}-rt1-${i}`);
      const many = Array.from({ length: 2048 }, (_, i) => `many-${id}-rt2048-${i}`);
      expect(
        await state.setManyWithin(
          `many-${id}-rt-budget1`,
          1 << 30,
          few.map((k) => [k, `v-${k}`]),
          60_000,
        ),
      ).toBe(true);
      const writeFew = rec.take().length;
      expect(
        await state.setManyWithin(
          `many-${id}-rt-budget2048`,
          1 << 30,
          many.map((k) => [k, `v-${k}`]),
          60_000,
        ),
      ).toBe(true);
      const writeMany = rec.take().length;
      expect((await state.getMany(few))[0]).toBe(`v-${few[0]}`);
      const readFew = rec.take().length;
      const values = await state.getMany(many);
      const readMany = rec.take().length;
      expect(values).toEqual(many.map((k) => `v-${k}`));
      expect({ writeFew, writeMany, readFew, readMany }).toEqual({
        writeFew: 1,
        writeMany: 1,
        readFew: 1,
        readMany: 1,
      });
      // Nothing to do costs nothing.
      expect(await state.setManyWithin(`many-${id}-rt-budget0`, 1, [], 60_000)).toBe(true);
      expect(await state.getMany([])).toEqual([]);
      // Neither does a batch larger than the whole bound (it could never fit: not shipped to be refused).
      expect(
        await state.setManyWithin(
          `many-${id}-rt-budget-small`,
          100,
          many.map((k) => [k, `v-${k}`]),
          60_000,
        ),
      ).toBe(false);
      expect(rec.take()).toEqual([]);
    } finally {
      rec.stop();
    }
  });

  it('setManyWithin counts bytes, stores all or none, and entries expire with the counter', async () => {
    const budget = `many-${id}-budget`;
    const first: Array<[string, string]> = [
      [`many-${id}-w1`, 'x'.repeat(100)],
      [`many-${id}-w2`, 'y'.repeat(100)],
    ];
    const firstBytes = distinctEntries(first).bytes;
    const bound = firstBytes * 2 + 10;
    expect(await state.setManyWithin(budget, bound, first, 60_000)).toBe(true);
    expect(await state.get(budget)).toBe(String(firstBytes));
    expect(await state.getMany(first.map(([k]) => k))).toEqual(first.map(([, v]) => v));
    const counterTtl = await state.ttl(budget);
    expect(counterTtl).toBeGreaterThan(0);
    expect(counterTtl).toBeLessThanOrEqual(60_000);
    // A later write asking for an hour lives no longer than the counter that counted it.
    const second: Array<[string, string]> = [
      [`many-${id}-w3`, 'z'.repeat(100)],
      [`many-${id}-w4`, 'v'.repeat(100)],
    ];
    expect(await state.setManyWithin(budget, bound, second, 3_600_000)).toBe(true);
    expect(await state.get(budget)).toBe(String(firstBytes + distinctEntries(second).bytes));
    expect(await state.ttl(`many-${id}-w3`)).toBeLessThanOrEqual(60_000);
    // Past the bound: nothing of the batch is written and the counter is unchanged.
    const third: Array<[string, string]> = [
      [`many-${id}-w5`, 'a'],
      [`many-${id}-w6`, 'b'.repeat(100)],
    ];
    expect(await state.setManyWithin(budget, bound, third, 60_000)).toBe(false);
    expect(await state.getMany(third.map(([k]) => k))).toEqual([null, null]);
    expect(await state.get(budget)).toBe(String(firstBytes + distinctEntries(second).bytes));
    // A batch larger than the bound on its own is refused on an empty counter too.
    expect(await state.setManyWithin(`many-${id}-budget-small`, 10, third, 60_000)).toBe(false);
    expect(await state.get(`many-${id}-budget-small`)).toBeNull();
    expect(await state.getMany(third.map(([k]) => k))).toEqual([null, null]);
  });

  it('setManyWithin writes a repeated key once (the last value) and counts it once', async () => {
    const budget = `many-${id}-dup-budget`;
    const entries: Array<[string, string]> = [
      [`many-${id}-dup`, 'first'],
      [`many-${id}-dup2`, 'other'],
      [`many-${id}-dup`, 'last'],
    ];
    expect(await state.setManyWithin(budget, 1 << 20, entries, 60_000)).toBe(true);
    expect(await state.getMany([`many-${id}-dup`, `many-${id}-dup2`])).toEqual(['last', 'other']);
    expect(await state.get(budget)).toBe(
      String(Buffer.byteLength(`many-${id}-dup`) + 4 + Buffer.byteLength(`many-${id}-dup2`) + 5),
    );
  });

  it('setManyWithin keeps concurrent writers under one counter within the bound exactly', async () => {
    const budget = `many-${id}-race`;
    const batch = (n: number): Array<[string, string]> =>
      [0, 1, 2].map((j) => [`many-${id}-race-${String(n).padStart(2, '0')}-${j}`, 'r'.repeat(1000)]);
    const bytes = distinctEntries(batch(0)).bytes;
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, n) => state.setManyWithin(budget, bytes * 7, batch(n), 60_000)),
    );
    expect(results.filter(Boolean)).toHaveLength(7);
    expect(await state.get(budget)).toBe(String(bytes * 7));
    const live = await state.getMany(Array.from({ length: 20 }, (_, n) => batch(n).map(([k]) => k)).flat());
    expect(live.filter((v) => v !== null)).toHaveLength(21);
    // Every batch whole or absent.
    for (let n = 0; n < 20; n++) {
      const mine = live.slice(n * 3, n * 3 + 3).filter((v) => v !== null).length;
      expect({ n, mine: mine === 0 || mine === 3 }).toEqual({ n, mine: true });
    }
  });

  it('setManyWithin starts a new count once the counter and its entries have expired', async () => {
    const budget = `many-${id}-window`;
    const entries: Array<[string, string]> = [[`many-${id}-win-1`, 'q'.repeat(200)]];
    const bytes = distinctEntries(entries).bytes;
    expect(await state.setManyWithin(budget, bytes, entries, 300)).toBe(true);
    // (The refusal while the counter lives is the previous test's, under a 60 s counter: asserted here, in a
    // 300 ms window, a slow machine could see the window end first.)
    while ((await state.ttl(budget)) > 0) await pace();
    // Gone together with the counter that counted it: the bound held while it was live.
    expect(await state.getMany([`many-${id}-win-1`])).toEqual([null]);
    expect(await state.setManyWithin(budget, bytes, [[`many-${id}-win-2`, 'q'.repeat(200)]], 60_000)).toBe(true);
    expect(await state.get(`many-${id}-win-2`)).toBe('q'.repeat(200));
  });
});
