import type { ServerResponse } from 'http';
import { Readable, Writable } from 'stream';
import { serveObject } from './serve-object';

describe('serveObject', () => {
  it('cuts a client that takes nothing for stallMs, and the storage stream (an S3 socket) is released with it', async () => {
    // The client reads nothing: the first chunk is never acknowledged.
    let onStall: (() => void) | undefined;
    let stallMs: number | undefined;
    const res = Object.assign(new Writable({ highWaterMark: 1, write: () => undefined }), {
      setTimeout(ms: number, cb: () => void) {
        stallMs = ms;
        onStall = cb;
        return this;
      },
    });
    let served = 0;
    const body = new Readable({
      read() {
        this.push(Buffer.alloc(64 * 1024, served++ % 256));
      },
    });
    serveObject({ body, size: undefined }, res as unknown as ServerResponse, 30_000);
    await new Promise((r) => setImmediate(r));
    expect(stallMs).toBe(30_000);
    expect(body.destroyed).toBe(false);
    // The socket's inactivity timer fires (Node calls it after stallMs without reads or writes).
    onStall!();
    await new Promise((r) => body.once('close', r));
    expect(res.destroyed).toBe(true);
    expect(body.destroyed).toBe(true);
  });

  it('cuts a download not taken whole by its deadline (stallMs plus its size at 256 KiB/s), however it trickles', async () => {
    const scheduled: Array<{ ms: number; fn: () => void }> = [];
    const timers = {
      now: () => 0,
      after: (ms: number, fn: () => void) => (scheduled.push({ ms, fn }), { cancel: () => undefined }),
    };
    // A client taking a little now and then: every write is acknowledged, slowly (the idle timer never fires).
    const res = Object.assign(
      new Writable({ highWaterMark: 1, write: (_chunk, _enc, done) => void setImmediate(done) }),
      { setTimeout: () => res },
    );
    let served = 0;
    const body = new Readable({
      read() {
        if (served++ < 1000) this.push(Buffer.alloc(1024));
        else this.push(null);
      },
    });
    serveObject({ body, size: 1024 * 1000 }, res as unknown as ServerResponse, 30_000, timers);
    // Its deadline: 30 s, plus 1000 KiB at 256 KiB/s.
    expect(scheduled.map((s) => s.ms)).toEqual([30_000 + (1000 / 256) * 1000]);
    scheduled[0].fn();
    await new Promise((r) => body.once('close', r));
    expect(res.destroyed).toBe(true);
    expect(body.destroyed).toBe(true);
  });
});
