import { EventEmitter } from 'events';
import * as http from 'http';
import type { AddressInfo } from 'net';
import { sendJson } from './json-response';

/** What sendJson gave the response: its status, head and body. */
function capture(room = Infinity) {
  const sent: { status?: number; head?: string[]; body?: string | Buffer; pieces: Buffer[]; ended: boolean } = {
    pieces: [],
    ended: false,
  };
  const drain = new EventEmitter();
  let buffered = 0;
  const res = {
    destroyed: false,
    destroy: () => ((res.destroyed = true), drain.emit('close'), res),
    writeHead: (status: number, head: string[]) => ((sent.status = status), (sent.head = head), res),
    // Like a socket with `room` bytes: write() answers false once they are taken, until 'drain'.
    write: (piece: Buffer) => (sent.pieces.push(piece), (buffered += piece.length) < room),
    writableEnded: false,
    on: (event: string, fn: () => void) => (drain.on(event, fn), res),
    once: (event: string, fn: () => void) => (drain.once(event, fn), res),
    off: (event: string, fn: () => void) => (drain.off(event, fn), res),
    end: (body?: string | Buffer) => ((sent.body = body), (sent.ended = true), res),
    drained: () => ((buffered = 0), drain.emit('drain')),
    closed: () => drain.emit('close'),
    socketGiven: () => drain.emit('socket'),
    drainListeners: () => drain.listenerCount('drain'),
  };
  return { res: res as never, sent };
}

const header = (head: string[] | undefined, name: string) => head?.[head.indexOf(name) + 1];

describe('sendJson', () => {
  it('writes a small answer as its text, with its length in bytes and the extra headers in one head', () => {
    const { res, sent } = capture();
    sendJson(res, 201, { name: 'café' }, ['X-Extra', '1']);
    expect(sent.status).toBe(201);
    expect(sent.body).toBe('{"name":"café"}');
    expect(header(sent.head, 'X-Extra')).toBe('1');
    expect(header(sent.head, 'Content-Type')).toBe('application/json; charset=utf-8');
    expect(header(sent.head, 'Content-Length')).toBe(String(Buffer.byteLength('{"name":"café"}')));
  });

  it('writes a large answer as its UTF-8 bytes (what Node writes fastest), the same bytes and length', () => {
    const { res, sent } = capture();
    const text = JSON.stringify({ data: Array.from({ length: 2000 }, (_, i) => `entrée ${i} 名前`) });
    expect(text.length).toBeGreaterThan(16_384);
    sendJson(res, 200, undefined, undefined, text);
    expect(Buffer.isBuffer(sent.body)).toBe(true);
    expect((sent.body as Buffer).toString('utf8')).toBe(text);
    expect(header(sent.head, 'Content-Length')).toBe(String(Buffer.byteLength(text)));
  });

  it('writes an answer given in pieces one after the other, its length their sum', () => {
    const { res, sent } = capture();
    const pieces = [Buffer.from('{"data":['), Buffer.from('"é名",'), Buffer.from('1]}')];
    sendJson(res, 200, undefined, ['X-Extra', '2'], pieces);
    expect(sent.pieces).toEqual(pieces);
    expect(sent.body).toBeUndefined();
    expect(sent.ended).toBe(true);
    expect(header(sent.head, 'Content-Length')).toBe(String(Buffer.concat(pieces).length));
    expect(header(sent.head, 'X-Extra')).toBe('2');
  });

  it('hands a large pieced answer to the socket 256 KiB a turn, and waits while the socket asks to drain', async () => {
    const pieces = Array.from({ length: 40 }, (_, i) => Buffer.alloc(32 * 1024, i));
    const turn = () => new Promise<void>((resolve) => setImmediate(resolve));
    const { res, sent } = capture();
    sendJson(res, 200, undefined, undefined, pieces);
    expect(sent.pieces).toHaveLength(8); // 8 x 32 KiB in the first turn
    await turn();
    expect(sent.pieces).toHaveLength(16);
    while (!sent.ended) await turn();
    expect(Buffer.concat(sent.pieces).equals(Buffer.concat(pieces))).toBe(true);

    const slow = capture(100 * 1024);
    sendJson(slow.res, 200, undefined, undefined, pieces);
    expect(slow.sent.pieces).toHaveLength(8); // the turn's run, though the 4th filled the room: no more until 'drain'
    await turn();
    await turn();
    expect(slow.sent.pieces).toHaveLength(8);
    (slow.res as unknown as { drained: () => void }).drained();
    expect(slow.sent.pieces).toHaveLength(8); // not from 'drain' itself: in a later turn
    await turn();
    expect(slow.sent.pieces).toHaveLength(16);
    while (!slow.sent.ended) {
      (slow.res as unknown as { drained: () => void }).drained();
      await turn();
    }
    expect(Buffer.concat(slow.sent.pieces).equals(Buffer.concat(pieces))).toBe(true);

    // A client gone mid-answer: nothing more is written, and the socket's close leaves no 'drain' listener.
    const gone = capture(100 * 1024);
    sendJson(gone.res, 200, undefined, undefined, pieces);
    const goneRes = gone.res as unknown as {
      destroyed: boolean;
      drained: () => void;
      closed: () => void;
      drainListeners: () => number;
    };
    expect(goneRes.drainListeners()).toBe(1); // the room is full: the pump waits for 'drain'
    goneRes.destroyed = true;
    goneRes.closed();
    expect(goneRes.drainListeners()).toBe(0);
    goneRes.drained();
    await turn();
    expect(gone.sent.pieces).toHaveLength(8);
    expect(gone.sent.ended).toBe(false);
  });

  it('cuts a pieced answer whose client takes nothing more for stallMs while the socket asks to drain', async () => {
    jest.useFakeTimers();
    try {
      const pieces = Array.from({ length: 40 }, (_, i) => Buffer.alloc(32 * 1024, i));
      const stalled = capture(100 * 1024);
      sendJson(stalled.res, 200, undefined, undefined, pieces, 5000);
      const r = stalled.res as unknown as { destroyed: boolean; drainListeners: () => number };
      expect(r.drainListeners()).toBe(1);
      jest.advanceTimersByTime(4999);
      expect(r.destroyed).toBe(false);
      jest.advanceTimersByTime(1);
      expect(r.destroyed).toBe(true);
      expect(r.drainListeners()).toBe(0);

      // A client that drains in time is not cut: each wait has its own stallMs.
      const reading = capture(100 * 1024);
      sendJson(reading.res, 200, undefined, undefined, pieces, 5000);
      const rr = reading.res as unknown as { destroyed: boolean; drained: () => void };
      for (let i = 0; i < 20 && !reading.sent.ended; i++) {
        jest.advanceTimersByTime(400);
        rr.drained();
        await Promise.resolve(); // the drain wait settles
        jest.runOnlyPendingTimers(); // the setImmediate that writes the next run
      }
      expect(reading.sent.ended).toBe(true);
      expect(rr.destroyed).toBe(false);

      // One that drains within each stallMs, but too slowly for the whole answer (1.25 MiB by 5 s + 5 s at the
      // minimum rate), is cut at that deadline.
      const trickle = capture(100 * 1024);
      sendJson(trickle.res, 200, undefined, undefined, pieces, 5000);
      const tr = trickle.res as unknown as { destroyed: boolean; drained: () => void };
      let waited = 0;
      while (!tr.destroyed && waited < 60_000) {
        jest.advanceTimersByTime(4000);
        waited += 4000;
        if (!tr.destroyed) {
          tr.drained();
          await Promise.resolve();
          jest.runOnlyPendingTimers();
        }
      }
      expect(tr.destroyed).toBe(true);
      expect(trickle.sent.ended).toBe(false);
      expect(waited).toBeLessThanOrEqual(12_000);
    } finally {
      jest.useRealTimers();
    }
  });

  it('times a pieced answer queued behind another on a pipelined connection only once it has its socket', () => {
    jest.useFakeTimers();
    try {
      const pieces = Array.from({ length: 40 }, (_, i) => Buffer.alloc(32 * 1024, i));
      const queued = capture(100 * 1024);
      const r = queued.res as unknown as { socket: unknown; destroyed: boolean };
      r.socket = null;
      sendJson(queued.res, 200, undefined, undefined, pieces, 5000);
      // Its first run is written (Node holds it, and reads no further request of the connection meanwhile), and no
      // stall time runs while it is queued.
      expect(queued.sent.pieces).toHaveLength(8);
      jest.advanceTimersByTime(600_000);
      expect(r.destroyed).toBe(false);
      // Given its socket, it is timed as any answer.
      r.socket = {};
      (queued.res as unknown as { socketGiven: () => void }).socketGiven();
      jest.advanceTimersByTime(4999);
      expect(r.destroyed).toBe(false);
      jest.advanceTimersByTime(1);
      expect(r.destroyed).toBe(true);
    } finally {
      jest.useRealTimers();
    }
  });

  it('writes a pieced answer over a real socket a turn at a time, though the socket drains at once', async () => {
    // Over loopback the kernel takes each write whole and Node emits 'drain' before the turn ends: 16 MiB must
    // still take many turns, at most 256 KiB (and the piece reaching it) handed to the socket in each.
    const pieces = Array.from({ length: 2048 }, (_, i) => Buffer.alloc(8192, 65 + (i % 26)));
    const perTurn: number[] = [];
    let sampling = true;
    const server = http.createServer((req, res) => {
      const socket = res.socket!;
      let last = socket.bytesWritten;
      // One sample a turn of the event loop (setImmediate runs once per turn): the bytes handed to the socket since.
      const sample = () => {
        perTurn.push(socket.bytesWritten - last);
        last = socket.bytesWritten;
        if (sampling) setImmediate(sample);
      };
      setImmediate(sample);
      sendJson(res, 200, undefined, undefined, pieces);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const body = await new Promise<Buffer>((resolve, reject) =>
        http
          .get({ host: '127.0.0.1', port }, (r) => {
            const got: Buffer[] = [];
            r.on('data', (c: Buffer) => got.push(c));
            r.on('end', () => resolve(Buffer.concat(got)));
          })
          .on('error', reject),
      );
      sampling = false;
      expect(body.equals(Buffer.concat(pieces))).toBe(true);
      const head = 512;
      expect(Math.max(...perTurn)).toBeLessThanOrEqual(256 * 1024 + 8192 + head);
      expect(perTurn.filter((n) => n > 0).length).toBeGreaterThan(32); // 4 before: megabytes a turn
    } finally {
      sampling = false;
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
