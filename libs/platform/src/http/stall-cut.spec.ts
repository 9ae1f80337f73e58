import { EventEmitter } from 'events';
import * as http from 'http';
import * as net from 'net';
import type { AddressInfo } from 'net';
import { cutStalledAnswer, MIN_ANSWER_BYTES_PER_SECOND, StallTimers } from './stall-cut';

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
});
