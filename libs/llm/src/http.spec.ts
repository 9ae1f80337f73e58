import { createServer, Server } from 'http';
import type { AddressInfo } from 'net';
import { UpstreamHttp } from './http';
import { CallAbortedError } from './types';

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
    const read = (bytes: number): Promise<void> | undefined => {
      if (waiting) piecesWhileWaiting++;
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
    expect(turns).toBeGreaterThanOrEqual(15); // 4 MiB, a turn every 256 KiB
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
