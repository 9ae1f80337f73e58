import { EventEmitter } from 'events';
import type { Response } from 'express';
import { queuedAnswer } from '../../../../test/support/pipelined';
import { clientGone, SseResponse } from './sse-response';

/** A response whose client reads nothing: every write is refused until `drain`, which never comes unless emitted. */
function stalledResponse() {
  const res = Object.assign(new EventEmitter(), {
    writableEnded: false,
    writableFinished: false,
    destroyed: false,
    writes: 0,
    write() {
      res.writes++;
      return false;
    },
    destroy() {
      res.destroyed = true;
      res.emit('close');
    },
    end() {
      res.writableEnded = true;
    },
  });
  return res;
}

describe('SseResponse', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('cuts a client that takes nothing for stallMs while an event waits, aborting the upstream call', async () => {
    const res = stalledResponse();
    const gone = clientGone(res as unknown as Response);
    const sse = new SseResponse(res as unknown as Response, 30_000);
    const written = sse.data({ n: 1 });
    await jest.advanceTimersByTimeAsync(29_999);
    expect(res.destroyed).toBe(false);
    await jest.advanceTimersByTimeAsync(1);
    await written;
    expect(res.destroyed).toBe(true);
    expect(gone.signal.aborted).toBe(true);
    // Nothing more is written to a cut client.
    await sse.data({ n: 2 });
    expect(res.writes).toBe(1);
  });

  it('keeps a slow client that drains in time, whatever the stream’s total length', async () => {
    const res = stalledResponse();
    const sse = new SseResponse(res as unknown as Response, 30_000);
    for (let i = 0; i < 5; i++) {
      const written = sse.data({ n: i });
      await jest.advanceTimersByTimeAsync(20_000);
      res.emit('drain');
      await written;
    }
    await jest.advanceTimersByTimeAsync(60_000);
    expect(res.destroyed).toBe(false);
    expect(res.writes).toBe(5);
  });
});

describe('clientGone', () => {
  it('fires for an answer queued behind another on a pipelined connection when that connection closes', async () => {
    const { res, client, close } = await queuedAnswer();
    try {
      expect(res.socket).toBeNull();
      const gone = clientGone(res as unknown as Response);
      const aborted = new Promise<void>((resolve) => gone.signal.addEventListener('abort', () => resolve()));
      client.destroy();
      await aborted;
      expect(gone.aborted).toBe(true);
    } finally {
      await close();
    }
  });
});
