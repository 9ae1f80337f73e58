import type { Request, Response } from 'express';
import { createServer, IncomingMessage, request as httpRequest, Server, ServerResponse } from 'node:http';
import { AddressInfo, connect } from 'node:net';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { bodyReader, BodyReaderOptions, INFLATE_RATIO_FLOOR } from './body-reader';
import { rejectDeepJson } from './json-depth';

interface Answer {
  status: number;
  body: { body?: unknown; type?: string; status?: number; limit?: number; next?: string };
}

const LIMIT = 1000;

/** A server that runs the reader, then answers what it read (or the error it passed on). */
function serve(timeoutMs = 60_000, extra: Partial<BodyReaderOptions> = {}): Promise<{ server: Server; port: number }> {
  const read = bodyReader({
    limit: LIMIT,
    ...extra,
    timeoutMs,
    verify: rejectDeepJson,
    respond: (err, _req, res) => {
      const e = err as { status: number; type: string };
      res
        .writeHead(e.status, { 'content-type': 'application/json' })
        .end(JSON.stringify({ type: e.type, status: e.status }));
    },
    ...extra,
  });
  const reader = (req: IncomingMessage, res: ServerResponse) =>
    read(req as Request, res as Response, (err?: unknown) => {
      if (err) {
        const e = err as { status: number; type: string; limit?: number };
        res
          .writeHead(e.status, { 'content-type': 'application/json' })
          .end(JSON.stringify({ type: e.type, status: e.status, limit: e.limit }));
      } else {
        // `next` says what a later parser would see: the body is consumed (JSON) or still to read; an
        // unread body is then read off as a later parser would (the timeout answers if it never ends).
        const next = req.readableEnded ? 'consumed' : 'unread';
        const answer = () => {
          if (!res.headersSent)
            res
              .writeHead(200, { 'content-type': 'application/json' })
              .end(JSON.stringify({ body: (req as Request).body as unknown, next }));
        };
        if (req.readableEnded) answer();
        else req.on('end', answer).resume();
      }
    });
  const server = createServer((req, res) => {
    // As Express's router: a reader that throws is answered 500 (never expected).
    try {
      reader(req, res);
    } catch (e) {
      res
        .writeHead(500, { 'content-type': 'application/json' })
        .end(JSON.stringify({ type: `thrown: ${(e as Error).message}`, status: 500 }));
    }
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve({ server, port: (server.address() as AddressInfo).port })),
  );
}

function send(
  port: number,
  headers: Record<string, string | number>,
  body?: Buffer | string,
  opts: { end?: boolean; method?: string; path?: string } = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: '127.0.0.1', port, method: opts.method ?? 'POST', path: opts.path ?? '/', headers },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            body: JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as Answer['body'],
          }),
        );
      },
    );
    req.on('error', reject);
    if (body !== undefined) req.write(body);
    if (opts.end !== false) req.end();
  });
}

describe('bodyReader', () => {
  let server: Server;
  let port: number;
  beforeAll(async () => ({ server, port } = await serve()));
  afterAll(() => new Promise((r) => server.close(r)));

  const json = (body: string | Buffer, extra: Record<string, string | number> = {}) =>
    send(port, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), ...extra }, body);

  it('parses a JSON object or array (content type case-insensitive, with parameters)', async () => {
    expect(await json('{"a":[1,"ü"]}')).toEqual({ status: 200, body: { body: { a: [1, 'ü'] }, next: 'consumed' } });
    expect(
      await send(port, { 'content-type': 'Application/JSON; charset=UTF-8', 'content-length': 7 }, ' [1,2] '),
    ).toEqual({ status: 200, body: { body: [1, 2], next: 'consumed' } });
    expect((await json('\ufeff{"bom":true}')).body.body).toEqual({ bom: true });
  });

  it('reads an empty JSON body as {} and leaves bodiless requests alone', async () => {
    expect((await json('')).body.body).toEqual({});
    expect(await send(port, { 'content-type': 'application/json', 'content-length': 0 })).toEqual({
      status: 200,
      body: { body: {}, next: 'consumed' },
    });
    expect(await send(port, { 'content-type': 'application/json' }, undefined, { method: 'GET' })).toEqual({
      status: 200,
      body: { next: 'unread' },
    });
  });

  it('refuses a top-level scalar, malformed JSON and whitespace only (400 entity.parse.failed)', async () => {
    for (const text of ['"str"', '42', 'null', '{"a":', '{a:1}', '   ']) {
      expect({ text, ...(await json(text)) }).toEqual({
        text,
        status: 400,
        body: { type: 'entity.parse.failed', status: 400 },
      });
    }
  });

  it('refuses nesting deeper than the verify hook allows, before parsing (400 entity.too.deep)', async () => {
    expect(await json('['.repeat(65) + ']'.repeat(65))).toEqual({
      status: 400,
      body: { type: 'entity.too.deep', status: 400 },
    });
    expect((await json('['.repeat(64) + ']'.repeat(64))).status).toBe(200);
  });

  it('refuses a body over the limit: announced (at once) or chunked (counted as it comes), 413 with the limit', async () => {
    const big = JSON.stringify({ a: 'x'.repeat(LIMIT) });
    expect(await json(big)).toEqual({ status: 413, body: { type: 'entity.too.large', status: 413, limit: LIMIT } });
    expect(await send(port, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' }, big)).toEqual({
      status: 413,
      body: { type: 'entity.too.large', status: 413, limit: LIMIT },
    });
    expect(
      (await send(port, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' }, '{"small":1}')).body
        .body,
    ).toEqual({ small: 1 });
  });

  it('inflates gzip, deflate and br bodies; the limit applies to the inflated bytes (a small bomb is 413)', async () => {
    const text = JSON.stringify({ zipped: true });
    for (const [encoding, packed] of [
      ['gzip', gzipSync(text)],
      ['deflate', deflateSync(text)],
      ['br', brotliCompressSync(text)],
      ['GZIP', gzipSync(text)],
    ] as const) {
      expect({ encoding, ...(await json(packed, { 'content-encoding': encoding })) }).toEqual({
        encoding,
        status: 200,
        body: { body: { zipped: true }, next: 'consumed' },
      });
    }
    const bomb = gzipSync(JSON.stringify({ a: 'x'.repeat(100_000) }));
    expect(bomb.length).toBeLessThan(LIMIT);
    expect(await json(bomb, { 'content-encoding': 'gzip' })).toEqual({
      status: 413,
      body: { type: 'entity.too.large', status: 413, limit: LIMIT },
    });
  });

  it('answers an unknown content encoding 415 and a corrupt compressed body 400', async () => {
    expect(await json('{}', { 'content-encoding': 'compress' })).toEqual({
      status: 415,
      body: { type: 'encoding.unsupported', status: 415 },
    });
    expect(await json(Buffer.from('not gzip at all'), { 'content-encoding': 'gzip' })).toEqual({
      status: 400,
      body: { type: 'entity.inflate.failed', status: 400 },
    });
  });

  it("answers 415 to encodings named like Object.prototype's members (no throw, and the process lives on)", async () => {
    for (const encoding of [
      'constructor',
      '__proto__',
      'toString',
      'isPrototypeOf',
      'hasOwnProperty',
      'gzip, gzip',
      'identity, gzip',
    ]) {
      expect({ encoding, ...(await json('{"a":1}', { 'content-encoding': encoding })) }).toEqual({
        encoding,
        status: 415,
        body: { type: 'encoding.unsupported', status: 415 },
      });
    }
    // The answers above came before their bodies ended; those ends (read off by Node) must not throw either.
    expect(await json('{"after":true}')).toEqual({ status: 200, body: { body: { after: true }, next: 'consumed' } });
  });

  it('reads an empty Content-Encoding as identity (as body-parser)', async () => {
    expect(await json('{"a":1}', { 'content-encoding': '' })).toEqual({
      status: 200,
      body: { body: { a: 1 }, next: 'consumed' },
    });
  });

  it('reads off bytes after the end of a compressed stream before going on (the request is consumed)', async () => {
    const packed = Buffer.concat([deflateSync('{"a":1}'), Buffer.alloc(50_000, 0x20)]);
    expect(await json(packed, { 'content-encoding': 'deflate' })).toEqual({
      status: 200,
      body: { body: { a: 1 }, next: 'consumed' },
    });
  });

  it('decodes UTF-16 charsets; other charsets are 415', async () => {
    const le = Buffer.from('{"w":"中文"}', 'utf16le');
    expect(
      (await send(port, { 'content-type': 'application/json; charset=utf-16le', 'content-length': le.length }, le)).body
        .body,
    ).toEqual({ w: '中文' });
    for (const charset of ['latin1', 'utf-7', 'utf8']) {
      expect({ charset, ...(await json('{}', { 'content-type': `application/json; charset=${charset}` })) }).toEqual({
        charset,
        status: 415,
        body: { type: 'charset.unsupported', status: 415 },
      });
    }
  });

  it('checks the depth of a UTF-16 body on its text, not its raw bytes', async () => {
    const utf16 = (text: string) => {
      const le = Buffer.from(text, 'utf16le');
      return send(port, { 'content-type': 'application/json; charset=utf-16le', 'content-length': le.length }, le);
    };
    // U+0122 is the bytes 22 01 in UTF-16LE: a byte scanner reads a '"' there and loses track of strings.
    const deep = '['.repeat(200) + ']'.repeat(200);
    expect(await utf16(`{"a":"\u0122","b":${deep}}`)).toEqual({
      status: 400,
      body: { type: 'entity.too.deep', status: 400 },
    });
    // ...and brackets inside a string are not nesting.
    const inString = `{"a":"\u0122${'['.repeat(100)}"}`;
    expect(await utf16(inString)).toEqual({ status: 200, body: { body: JSON.parse(inString), next: 'consumed' } });
  });

  it('never parses a JSON body cut off before its Content-Length', async () => {
    // The client announces 20 bytes, sends 2 and half-closes: Node's parser sees the request cut off.
    const answer = await new Promise<{ status: number; raw: string }>((resolve, reject) => {
      const socket = connect(port, '127.0.0.1');
      let raw = '';
      socket.on('data', (d: Buffer) => (raw += d.toString('utf8')));
      socket.on('end', () => resolve({ status: Number(/^HTTP\/1\.1 (\d+)/.exec(raw)?.[1] ?? 0), raw }));
      socket.on('error', reject);
      socket.write('POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 20\r\n\r\n{}');
      socket.end();
    });
    // Cut off before its announced length: an aborted request, never parsed as the 2 bytes it got.
    expect(answer.raw).not.toContain('"body"');
  });

  it('passes other content types on unread, for their own parser', async () => {
    expect(
      await send(port, { 'content-type': 'application/x-www-form-urlencoded', 'content-length': 3 }, 'a=1'),
    ).toEqual({ status: 200, body: { next: 'unread' } });
    expect(await send(port, { 'content-type': 'text/plain', 'content-length': 2 }, '{}')).toEqual({
      status: 200,
      body: { next: 'unread' },
    });
  });
});

describe('bodyReader timeout', () => {
  let server: Server;
  let port: number;
  beforeAll(async () => ({ server, port } = await serve(200)));
  afterAll(() => new Promise((r) => server.close(r)));

  it('answers 408 and closes the connection when an announced JSON body does not come', async () => {
    // The body never completes: only the timeout can produce an answer (a hang ends at Jest's timeout).
    expect(
      await send(port, { 'content-type': 'application/json', 'content-length': 50 }, '{"a":', { end: false }),
    ).toEqual({ status: 408, body: { type: 'request.timeout', status: 408 } });
  });

  it('answers 408 when the rest of a request after its compressed body does not come', async () => {
    const packed = deflateSync('{"a":1}');
    expect(
      await send(
        port,
        { 'content-type': 'application/json', 'content-encoding': 'deflate', 'content-length': packed.length + 100 },
        Buffer.concat([packed, Buffer.from('  ')]),
        { end: false },
      ),
    ).toEqual({
      status: 408,
      body: { type: 'request.timeout', status: 408 },
    });
  });

  it('arms the same timeout for other bodies (forms, uploads) passed on to their parser', async () => {
    expect(
      await send(port, { 'content-type': 'application/x-www-form-urlencoded', 'content-length': 50 }, 'a=1&b', {
        end: false,
      }),
    ).toEqual({ status: 408, body: { type: 'request.timeout', status: 408 } });
  });
});

describe('bodyReader: limit per route and inflate ratio cap', () => {
  let server: Server;
  let port: number;
  // '/small' is a route with a small limit (a login); everything else may send a megabyte.
  beforeAll(
    async () =>
      ({ server, port } = await serve(60_000, {
        limit: (req) => (req.url === '/small' ? 100 : 1_000_000),
        maxInflateRatio: 32,
      })),
  );
  afterAll(() => new Promise((r) => server.close(r)));
  const json = { 'content-type': 'application/json' };

  it("applies the request's own limit: announced or inflated, 413 with that limit", async () => {
    const body = JSON.stringify({ a: 'x'.repeat(200) });
    expect(await send(port, json, body, { path: '/small' })).toEqual({
      status: 413,
      body: { type: 'entity.too.large', status: 413, limit: 100 },
    });
    expect(await send(port, { ...json, 'content-encoding': 'gzip' }, gzipSync(body), { path: '/small' })).toEqual({
      status: 413,
      body: { type: 'entity.too.large', status: 413, limit: 100 },
    });
    expect((await send(port, json, body, { path: '/large' })).status).toBe(200);
  });

  it('refuses a compressed body that inflates more than the ratio allows (413), under the limit', async () => {
    // 200 KB of {} inflated from well under 1 KB: far over 32:1, well under the 1 MB limit.
    const bomb = gzipSync(`[${'{},'.repeat(70_000)}{}]`);
    expect(bomb.length).toBeLessThan(1000);
    expect(await send(port, { ...json, 'content-encoding': 'gzip' }, bomb, { path: '/large' })).toEqual({
      status: 413,
      body: { type: 'entity.ratio.exceeded', status: 413 },
    });
    expect(
      (
        await send(port, { ...json, 'content-encoding': 'deflate' }, deflateSync(`[${'{},'.repeat(70_000)}{}]`), {
          path: '/large',
        })
      ).body.type,
    ).toBe('entity.ratio.exceeded');
  });

  it('accepts ordinary compressed JSON, and any ratio below INFLATE_RATIO_FLOOR inflated bytes', async () => {
    const words = Array.from({ length: 20_000 }, (_, i) => `word${(i * 7919) % 10007}`);
    const ordinary = gzipSync(JSON.stringify({ words }));
    expect(await send(port, { ...json, 'content-encoding': 'gzip' }, ordinary, { path: '/large' })).toMatchObject({
      status: 200,
      body: { body: { words } },
    });
    const small = `[${'{},'.repeat(Math.floor(INFLATE_RATIO_FLOOR / 3) - 10)}{}]`;
    expect(small.length).toBeLessThan(INFLATE_RATIO_FLOOR);
    expect(
      (await send(port, { ...json, 'content-encoding': 'gzip' }, gzipSync(small), { path: '/large' })).status,
    ).toBe(200);
  });
});
