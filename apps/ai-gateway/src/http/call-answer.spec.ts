import type { Response } from 'express';
import { createServer } from 'http';
import type { AddressInfo } from 'net';
import { connect } from 'net';
import { queuedAnswer } from '../../../../test/support/pipelined';
import { releaseWhenSent } from './call-answer';

describe('releaseWhenSent', () => {
  it('releases once the answer is sent, once', async () => {
    let released = 0;
    const server = createServer((_req, res) => {
      releaseWhenSent(res as unknown as Response, () => released++);
      res.end('done');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const answer = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
    expect(await answer.text()).toBe('done');
    await new Promise((r) => server.close(r));
    expect(released).toBe(1);
  });

  it('releases an answer queued behind another on a pipelined connection when that connection closes', async () => {
    // Node gives a queued answer (no socket of its own yet) no 'close' when its connection closes.
    const { res, client, close } = await queuedAnswer();
    let released = 0;
    const gone = new Promise<void>((resolve) =>
      releaseWhenSent(res as unknown as Response, () => {
        released++;
        resolve();
      }),
    );
    client.destroy();
    await gone;
    expect(released).toBe(1);
    await close();
  });

  it('releases at once a queued answer whose connection closed before it was written', async () => {
    const { res, client, close } = await queuedAnswer();
    const closed = new Promise((r) => res.req.socket.once('close', r));
    client.destroy();
    await closed;
    let released = 0;
    releaseWhenSent(res as unknown as Response, () => released++);
    expect(released).toBe(1);
    await close();
  });

  it('releases at once an answer whose client left before it was written', async () => {
    let released = 0;
    let answered!: () => void;
    const done = new Promise<void>((r) => (answered = r));
    const server = createServer((req, res) => {
      req.socket.once('close', () => {
        releaseWhenSent(res as unknown as Response, () => released++);
        answered();
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const socket = connect((server.address() as AddressInfo).port, '127.0.0.1');
    socket.on('error', () => undefined);
    socket.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n', () => socket.destroy());
    await done;
    expect(released).toBe(1);
    await new Promise((r) => server.close(r));
  });
});
