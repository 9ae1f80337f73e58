import { createServer, Server } from 'http';
import type { AddressInfo } from 'net';
import { UpstreamHttp } from './http';
import { CallAbortedError, UpstreamError } from './types';

/** A server answering every POST with `body` (JSON bytes), written at once: the kernel and undici hold what the reader has not taken. */
async function serve(body: Buffer): Promise<{ url: string; server: Server }> {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(body.length) });
      res.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

/** A JSON answer of about `bytes` bytes. */
function answer(bytes: number): Buffer {
  return Buffer.from(JSON.stringify({ data: 'x'.repeat(bytes) }));
}

describe('UpstreamHttp.callJson: a large answer read on the call pace', () => {
  const body = answer(4 * 1024 * 1024);
  let up: { url: string; server: Server };
  let http: UpstreamHttp;
  beforeAll(async () => {
    up = await serve(body);
    http = new UpstreamHttp({ baseUrl: up.url, connections: 1, headers: {}, timeoutMs: 10_000 });
  });
  afterAll(async () => {
    await http.close();
    await new Promise((resolve) => up.server.close(resolve));
  });

  it('stops reading at each turn the pace gives until it is over, and gets the body whole', async () => {
    let turns = 0;
    let waiting = false;
    let piecesWhileWaiting = 0;
    let owed = 0;
    let charged = 0;
    let largestPiece = 0;
    const read = (bytes: number): Promise<void> | undefined => {
      if (waiting) piecesWhileWaiting++;
      charged += bytes;
      largestPiece = Math.max(largestPiece, bytes);
      owed += bytes;
      if (owed < 256 * 1024) return undefined;
      owed = 0;
      turns++;
      waiting = true;
      return new Promise<void>((resolve) =>
        setImmediate(() => {
          waiting = false;
          resolve();
        }),
      );
    };
    let joined: Buffer | undefined;
    const parse = (pieces: Buffer[], size: number) => {
      joined = Buffer.concat(pieces, size);
      return Promise.resolve(JSON.parse(joined.toString('utf8')) as unknown);
    };
    const out = await http.callJson<{ data: string }>('/x', {}, { large: { from: 1, parse, read } });
    expect(joined!.equals(body)).toBe(true);
    expect(out.body.data.length).toBe(4 * 1024 * 1024);
    expect(charged).toBe(body.length); // every byte read was charged to the pace
    // A turn each time 256 KiB is owed; a piece may overshoot by up to its own size, so 4 MiB gives at least this many.
    expect(turns).toBeGreaterThanOrEqual(Math.floor(body.length / (256 * 1024 + largestPiece)));
    expect(turns).toBeGreaterThanOrEqual(8);
    expect(piecesWhileWaiting).toBe(0);
  });

  it('fails the call with the turn failure (a client gone) and reads no more', async () => {
    let pieces = 0;
    const read = (): Promise<void> | undefined => (++pieces === 3 ? Promise.reject(new CallAbortedError()) : undefined);
    await expect(
      http.callJson('/x', {}, { large: { from: 1, parse: () => Promise.resolve({}), read } }),
    ).rejects.toBeInstanceOf(CallAbortedError);
    expect(pieces).toBe(3);
    // The pool goes on: the next call is answered whole.
    const again = await http.callJson<{ data: string }>('/x', {}, {});
    expect(again.body.data.length).toBe(4 * 1024 * 1024);
  });
});

describe('UpstreamHttp.callJson: the deadline while the answer is read on the call pace', () => {
  let server: Server;
  let url: string;
  beforeAll(async () => {
    // Answers 400 KB of JSON, 20 KB at a time, each piece 100 ms after the last: 2 s in all.
    server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        const body = answer(400 * 1024);
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(body.length) });
        let at = 0;
        const next = () => {
          if (res.destroyed) return;
          res.write(body.subarray(at, (at += 20 * 1024)));
          if (at < body.length) setTimeout(next, 100);
          else res.end();
        };
        next();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
  });

  /** The error of one call to the dripping upstream with `timeoutMs`, its body read with `read`. */
  async function failure(timeoutMs: number, read: () => Promise<void>): Promise<unknown> {
    const http = new UpstreamHttp({ baseUrl: url, connections: 1, headers: {}, timeoutMs });
    try {
      return await http
        .callJson('/x', {}, { large: { from: 1, parse: () => Promise.resolve({}), read } })
        .catch((err: unknown) => err);
    } finally {
      await http.close();
    }
  }

  it('fails an upstream slower than the deadline as a timeout, though its reading gives turns', async () => {
    const e = await failure(400, () => new Promise<void>((resolve) => setImmediate(resolve)));
    expect(e).toBeInstanceOf(UpstreamError);
    expect(e).toMatchObject({ kind: 'timeout' });
  });

  it('does not wait for ever on a turn that never comes: the deadline moves by the wait, at most once more', async () => {
    expect(await failure(200, () => new Promise<void>(() => undefined))).toMatchObject({ kind: 'timeout' });
  });

  it("gives a turn's own failure as it is, not as the upstream's", async () => {
    const broke = new TypeError('the pace broke');
    expect(await failure(5_000, () => Promise.reject(broke))).toBe(broke);
  });
});
