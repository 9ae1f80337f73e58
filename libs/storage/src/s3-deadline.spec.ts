import * as http from 'http';
import * as net from 'net';
import { S3Storage } from './s3.storage';

/**
 * How `work` settled: its error's name, or 'hung' when it had not settled by `boundMs` (a bound for the failure
 * report, not a synchronisation: a working deadline settles it first).
 */
async function outcome(work: Promise<unknown>, boundMs: number): Promise<string> {
  let bound: NodeJS.Timeout | undefined;
  const hung = new Promise<string>((resolve) => (bound = setTimeout(() => resolve('hung'), boundMs)));
  try {
    return await Promise.race([
      work.then(
        () => 'answered',
        (e: Error) => e.name,
      ),
      hung,
    ]);
  } finally {
    clearTimeout(bound);
  }
}

/**
 * The S3 client's deadlines against the real @smithy/node-http-handler and a storage server that stops answering:
 * requestTimeout alone only logged a warning (throwOnRequestTimeout unset) and no idle timer was set (socketTimeout),
 * so each of these calls held its socket for ever.
 */
describe('S3Storage deadlines', () => {
  const DEADLINE_MS = 300;
  let server: net.Server;
  const sockets = new Set<net.Socket>();
  /** What the server does with a request: nothing at all, or the head of a 1 MB answer and no byte of its body. */
  let answer: 'nothing' | 'head only' = 'nothing';
  let storage: S3Storage;

  beforeAll(async () => {
    server = net.createServer((socket) => {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('data', () => {
        if (answer === 'head only')
          socket.write('HTTP/1.1 200 OK\r\nContent-Type: image/png\r\nContent-Length: 1048576\r\n\r\n');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    storage = new S3Storage({
      bucket: 'media',
      region: 'us-east-1',
      endpoint: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`,
      accessKeyId: 'KEY',
      secretAccessKey: 'SECRET',
      timeoutMs: DEADLINE_MS,
    });
  });
  afterAll(async () => {
    storage.destroy();
    sockets.forEach((s) => s.destroy());
    await new Promise((resolve) => server.close(resolve));
  });

  it('a GetObject, a HeadObject and a PutObject the server never answers fail with a TimeoutError', async () => {
    answer = 'nothing';
    expect(await outcome(storage.get('images/a.png'), 20 * DEADLINE_MS)).toBe('TimeoutError');
    expect(await outcome(storage.stat('images/a.png'), 20 * DEADLINE_MS)).toBe('TimeoutError');
    expect(await outcome(storage.put('images/b.png', Buffer.from('x'), 'image/png'), 20 * DEADLINE_MS)).toBe(
      'TimeoutError',
    );
  });

  it('a download whose body stops coming fails with a TimeoutError, its socket closed', async () => {
    answer = 'head only';
    const object = await storage.get('images/a.png');
    expect(object?.size).toBe(1048576);
    const read = (async () => {
      for await (const chunk of object!.body) void chunk;
    })();
    expect(await outcome(read, 20 * DEADLINE_MS)).toBe('TimeoutError');
    expect(object!.body.destroyed).toBe(true);
  });
});

describe('S3Storage download pool', () => {
  let server: http.Server;
  const trickles = new Set<NodeJS.Timeout>();
  let storage: S3Storage;

  beforeAll(async () => {
    // A storage server whose GetObject answers come a byte every 50 ms (each download keeps its socket busy, never
    // idle); every other call is answered at once.
    server = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        if (req.method !== 'GET')
          return void res.writeHead(200, { 'content-length': '1' }).end(req.method === 'HEAD' ? undefined : ' ');
        res.writeHead(200, { 'content-type': 'image/png', 'content-length': '1048576' });
        const trickle = setInterval(() => res.write('x'), 50);
        trickles.add(trickle);
        res.on('close', () => (clearInterval(trickle), trickles.delete(trickle)));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    storage = new S3Storage({
      bucket: 'media',
      region: 'us-east-1',
      endpoint: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`,
      accessKeyId: 'KEY',
      secretAccessKey: 'SECRET',
      timeoutMs: 500,
      downloadSockets: 2,
    });
  });
  afterAll(async () => {
    storage.destroy();
    trickles.forEach((t) => clearInterval(t));
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it('downloads holding every socket of their pool leave the writes theirs; one more download fails at its deadline', async () => {
    const held = await Promise.all([storage.get('images/a.png'), storage.get('images/a.png')]);
    try {
      expect(await outcome(storage.put('images/b.png', Buffer.from('more'), 'image/png'), 20_000)).toBe('answered');
      expect(await outcome(storage.delete('images/b.png'), 20_000)).toBe('answered');
      // No socket of the download pool for a third: it waits no longer than the deadline.
      expect(await outcome(storage.stat('images/a.png'), 20_000)).toBe('TimeoutError');
    } finally {
      held.forEach((o) => o?.body.destroy());
    }
    expect(await storage.stat('images/a.png')).toEqual({ size: 1 });
  });
});
