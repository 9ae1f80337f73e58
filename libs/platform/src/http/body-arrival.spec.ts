import { FakeClock } from '../../../../test/support/clock';
import { BODY_MIN_BYTES_PER_SECOND, BODY_RATE_GRACE_MS, BodyArrival } from './body-arrival';

/** Lets the rate check that a clock move woke run. */
const settle = () => new Promise((resolve) => setImmediate(resolve));
const body = () => ({ complete: false, socket: { bytesRead: 1_000 } });

describe('BodyArrival', () => {
  it('cuts a body below the floor once past its grace, once; a body above the floor is left', async () => {
    const clock = new FakeClock();
    const arrival = new BodyArrival(clock);
    const slow = body();
    const steady = body();
    let slowCuts = 0;
    let steadyCuts = 0;
    arrival.watch(slow, () => slowCuts++);
    arrival.watch(steady, () => steadyCuts++);
    for (let s = 0; s < BODY_RATE_GRACE_MS / 1000; s++) {
      slow.socket.bytesRead += BODY_MIN_BYTES_PER_SECOND - 512;
      steady.socket.bytesRead += BODY_MIN_BYTES_PER_SECOND + 512;
      clock.advance(1000);
      await settle();
    }
    expect([slowCuts, steadyCuts]).toEqual([1, 0]);
    clock.advance(1000);
    await settle();
    // The steady one stalls: its average falls under the floor.
    expect([slowCuts, steadyCuts]).toEqual([1, 1]);
    expect(arrival.size).toBe(0);
  });

  it('judges no body inside its grace, nor one whose body is all here, nor one no longer watched', async () => {
    const clock = new FakeClock();
    const arrival = new BodyArrival(clock);
    const [early, complete, stopped] = [body(), body(), body()];
    let cuts = 0;
    arrival.watch(early, () => cuts++);
    arrival.watch(complete, () => cuts++);
    const stop = arrival.watch(stopped, () => cuts++);
    clock.advance(BODY_RATE_GRACE_MS - 1000);
    await settle();
    expect(cuts).toBe(0);
    complete.complete = true;
    stop();
    early.socket.bytesRead += BODY_MIN_BYTES_PER_SECOND * 20;
    clock.advance(1000);
    await settle();
    expect(cuts).toBe(0);
    expect(arrival.size).toBe(1);
  });

  it('a later watch of the same request takes over: its start, its cut; the earlier stop does not end it', async () => {
    const clock = new FakeClock();
    const arrival = new BodyArrival(clock);
    const req = body();
    const cuts: string[] = [];
    const stopFirst = arrival.watch(req, () => cuts.push('first'));
    clock.advance(5000);
    await settle();
    arrival.watch(req, () => cuts.push('second'));
    stopFirst();
    clock.advance(BODY_RATE_GRACE_MS - 5000);
    await settle();
    expect(cuts).toEqual([]); // 5 s since the second watch: inside its grace
    clock.advance(5000);
    await settle();
    expect(cuts).toEqual(['second']);
  });

  it('leaves no wait on the clock once no body is watched (a test clock waiting for the next sleeper sees the right one)', async () => {
    const clock = new FakeClock();
    const arrival = new BodyArrival(clock);
    const stop = arrival.watch(body(), () => undefined);
    await clock.whenSleeping();
    stop();
    await settle();
    let woke = false;
    void clock.whenSleeping().then(() => (woke = true));
    await settle();
    expect(woke).toBe(false);
    // A later body starts the loop again.
    arrival.watch(body(), () => undefined);
    await settle();
    expect(woke).toBe(true);
  });
});
