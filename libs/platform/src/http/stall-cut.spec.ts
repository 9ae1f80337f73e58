import { EventEmitter } from 'events';
import * as http from 'http';
import * as net from 'net';
import type { AddressInfo } from 'net';
import { queuedAnswer } from '../../../../test/support/pipelined';
import { cutStalledAnswer, drainedOrCut, MIN_ANSWER_BYTES_PER_SECOND, StallTimers } from './stall-cut';

/** A server answering every request with `bytes` in one end(), under cutStalledAnswer. */
async function serve(bytes: number, stallMs: number, timers?: StallTimers) {
  const sockets: net.Socket[] = [];
  let first: (socket: net.Socket) => void;
  const answering = new Promise<net.Socket>((resolve) => (first = resolve));
  const server = http.createServer((_req, res) => {
    sockets.push(res.socket!);
    first(res.socket!);
    cutStalledAnswer(res, stallMs, timers);
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(bytes) });
    res.end(Buffer.alloc(bytes, 97));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { server, port, sockets, answering, close: () => new Promise((resolve) => server.close(resolve)) };
}

describe('cutStalledAnswer', () => {
  it('destroys the connection of a client that reads none of a 64 MiB answer, once its bytes stop moving', async () => {
    const s = await serve(64 * 1024 * 1024, 200);
    try {
      const client = net.connect(s.port, '127.0.0.1');
      client.pause(); // reads nothing (so it never learns of the cut either: the server's side is watched)
      client.on('error', () => undefined);
      client.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
      const answering = await s.answering;
      await new Promise<void>((resolve) => answering.once('close', () => resolve()));
      expect(answering.destroyed).toBe(true);
      client.destroy();
    } finally {
      await s.close();
    }
  });

  it('lets a client that reads take the whole answer, its kept connection open', async () => {
    const s = await serve(16 * 1024 * 1024, 5000);
    const agent = new http.Agent({ keepAlive: true });
    try {
      const got = await new Promise<number>((resolve, reject) =>
        http
          .get({ host: '127.0.0.1', port: s.port, agent }, (r) => {
            let n = 0;
            r.on('data', (c: Buffer) => (n += c.length));
            r.on('end', () => resolve(n));
          })
          .on('error', reject),
      );
      expect(got).toBe(16 * 1024 * 1024);
      expect(s.sockets[0].destroyed).toBe(false);
    } finally {
      agent.destroy();
      s.sockets.forEach((x) => x.destroy());
      await s.close();
    }
  });

  it('arms nothing for an answer the socket took whole', async () => {
    const armed: number[] = [];
    const timers: StallTimers = { now: () => 0, after: (ms) => (armed.push(ms), { cancel: () => undefined }) };
    const s = await serve(1024, 200, timers);
    try {
      const status = await new Promise<number>((resolve, reject) =>
        http
          .get({ host: '127.0.0.1', port: s.port, agent: false }, (r) => {
            r.resume();
            r.on('end', () => resolve(r.statusCode ?? 0));
          })
          .on('error', reject),
      );
      expect(status).toBe(200);
      expect(armed).toEqual([]);
    } finally {
      s.sockets.forEach((x) => x.destroy());
      await s.close();
    }
  });

  it('cuts a client that takes a little in each window but not the whole answer at the minimum average rate', () => {
    let now = 0;
    const due: Array<() => void> = [];
    const timers: StallTimers = { now: () => now, after: (_ms, fn) => (due.push(fn), { cancel: () => undefined }) };
    const socket = Object.assign(new EventEmitter(), {
      destroyed: false,
      writableLength: 10 * 1024 * 1024,
      _handle: { writeQueueSize: 0 },
      destroy() {
        this.destroyed = true;
      },
    });
    const res = Object.assign(new EventEmitter(), { socket, writableFinished: false });
    cutStalledAnswer(res as never, 1000, timers);
    res.emit('prefinish');
    // 10 MiB at the minimum rate: 40 s, after the first second's grace.
    const deadline = 1000 + (10 * 1024 * 1024 * 1000) / MIN_ANSWER_BYTES_PER_SECOND;
    while (!socket.destroyed && due.length) {
      now += 1000;
      socket.writableLength -= 1024; // a kilobyte a second: progress in every window
      due.shift()!();
    }
    expect(socket.destroyed).toBe(true);
    expect(now).toBe(deadline);
  });

  it('watches an answer ended while queued behind another on a pipelined connection (Node finishes it once it has the socket)', async () => {
    const socketsAtHandler: Array<net.Socket | null> = [];
    let secondAnswered!: () => void;
    const second = new Promise<void>((resolve) => (secondAnswered = resolve));
    let connection!: net.Socket;
    const server = http.createServer((req, res) => {
      socketsAtHandler.push(res.socket);
      cutStalledAnswer(res, 200);
      if (req.url === '/first') {
        connection = res.socket!;
        // The first answer ends only once the second one, queued behind it, has been ended.
        void second.then(() => res.end('first'));
        return;
      }
      res.writeHead(200, { 'content-length': String(64 * 1024 * 1024) });
      res.end(Buffer.alloc(64 * 1024 * 1024, 97));
      secondAnswered();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const client = net.connect((server.address() as AddressInfo).port, '127.0.0.1');
      client.pause(); // reads nothing of either answer
      client.on('error', () => undefined);
      client.write('GET /first HTTP/1.1\r\nHost: x\r\n\r\nGET /second HTTP/1.1\r\nHost: x\r\n\r\n');
      await second;
      // Node gave the second answer no socket while the first held the connection.
      expect(socketsAtHandler[1]).toBeNull();
      await new Promise<void>((resolve) =>
        connection.destroyed ? resolve() : connection.once('close', () => resolve()),
      );
      expect(connection.destroyed).toBe(true);
      client.destroy();
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

describe('drainedOrCut', () => {
  it('starts the stall time of an answer queued on a pipelined connection when it gets its socket', () => {
    jest.useFakeTimers();
    try {
      const res = Object.assign(new EventEmitter(), { socket: null as EventEmitter | null, destroyed: false });
      const destroy = jest.fn();
      let drained = false;
      void drainedOrCut(Object.assign(res, { destroy }) as never, 1000).then(() => (drained = true));
      // Queued behind a long answer: no stall time runs.
      jest.advanceTimersByTime(60_000);
      expect(destroy).not.toHaveBeenCalled();
      res.socket = new EventEmitter();
      res.emit('socket', res.socket);
      jest.advanceTimersByTime(999);
      expect(destroy).not.toHaveBeenCalled();
      jest.advanceTimersByTime(1);
      expect(destroy).toHaveBeenCalledTimes(1);
      expect(res.listenerCount('socket') + res.listenerCount('drain') + res.listenerCount('close')).toBe(0);
      void drained;
    } finally {
      jest.useRealTimers();
    }
  });

  it('ends the wait of an answer queued on a pipelined connection when that connection closes, and destroys it', async () => {
    const { res, client, close } = await queuedAnswer();
    try {
      expect(res.socket).toBeNull();
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      while (res.write(Buffer.alloc(64 * 1024))) void 0;
      const waited = drainedOrCut(res, 600_000);
      client.destroy();
      await waited;
      expect(res.destroyed).toBe(true);
    } finally {
      await close();
    }
  });
});
