import { BodyBudget } from './body-budget';

const MiB = 1024 * 1024;

describe('BodyBudget', () => {
  it("refuses a body that would take its caller past its share (429), and not another caller's", () => {
    const b = new BodyBudget(4 * MiB, 64 * MiB);
    expect(b.take('a', 3 * MiB)).toBeUndefined();
    expect(b.take('a', MiB)).toBeUndefined();
    // Full: even a body of unknown size (0: room for one byte) is refused before it is read.
    expect(b.take('a', 0)).toMatchObject({ status: 429, type: 'bodies.caller.busy', retryAfterSeconds: 1 });
    expect(b.take('a', 1)).toMatchObject({ status: 429 });
    expect(b.take('b', 2 * MiB)).toBeUndefined();
    expect([b.heldBy('a'), b.heldBy('b'), b.inFlight]).toEqual([4 * MiB, 2 * MiB, 6 * MiB]);
    b.give('a', MiB);
    expect(b.take('a', MiB)).toBeUndefined();
  });

  it("past the replica's budget a body is refused (503) only for a caller over an equal share of it: a few callers filling the replica do not shut the others out", () => {
    const b = new BodyBudget(4 * MiB, 6 * MiB);
    expect(b.take('a', 4 * MiB)).toBeUndefined();
    expect(b.take('b', 2 * MiB)).toBeUndefined();
    // Full. A newcomer still gets its share (6 MiB among three callers: 2 MiB), no more.
    expect(b.take('c', 0)).toBeUndefined();
    expect(b.take('c', 2 * MiB)).toBeUndefined();
    expect(b.take('c', 1)).toMatchObject({ status: 503, type: 'bodies.replica.busy', retryAfterSeconds: 1 });
    expect(b.take('b', 1)).toMatchObject({ status: 503 });
    expect(b.take('a', 1)).toMatchObject({ status: 429 });
    b.give('a', 4 * MiB);
    // Below the budget again: anyone within its own cap.
    expect(b.take('b', 2 * MiB)).toBeUndefined();
    expect(b.inFlight).toBe(6 * MiB);
  });

  it("a caller's first body, and the replica's, always has room (a body is bounded by its route's limit)", () => {
    const b = new BodyBudget(1024, 2048);
    expect(b.take('a', 4096)).toBeUndefined();
    expect(b.take('b', 1024)).toBeUndefined(); // its equal share of the replica: 2048 / 2
    expect(b.take('c', 1024)).toMatchObject({ status: 503 }); // more than 2048 / 3
    b.give('b', 1024);
    b.give('a', 4096);
    expect([b.heldBy('a'), b.inFlight]).toEqual([0, 0]);
  });
});
